/**
 * Recovery times: from the end of a fault (HCP restarted, PostgreSQL back, sessions cut) to the first
 * request HCP answers after it (202 or a deliberate refusal such as 409).
 */
export class RecoveryClock {
  private pending?: { label: string; at: number };
  readonly recoveries: Array<{ label: string; ms: number }> = [];

  faultEnded(label: string): void {
    this.close();
    this.pending = { label, at: Date.now() };
  }

  answered(at: number): void {
    if (!this.pending || at < this.pending.at) return;
    this.recoveries.push({ label: this.pending.label, ms: at - this.pending.at });
    this.pending = undefined;
  }

  /** A fault nothing recovered from before the next one (or the end of the stream) counts as not recovered. */
  close(): void {
    if (this.pending)
      this.recoveries.push({ label: `${this.pending.label} (no answer before the next fault)`, ms: -1 });
    this.pending = undefined;
  }

  /** A fault has ended and no request has been answered since. */
  get waiting(): boolean {
    return this.pending !== undefined;
  }

  get longestMs(): number {
    return Math.max(0, ...this.recoveries.map((r) => r.ms));
  }
}
