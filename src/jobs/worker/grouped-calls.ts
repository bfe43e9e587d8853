/**
 * Group commit for a statement that takes many items: the first call runs at once; calls made while a
 * run is in flight wait for it and then go together in the next run. One call alone costs no wait; many
 * at once cost one round trip per run instead of one each. A failed run fails every call it carried.
 */
export class GroupedCalls<T> {
  private pending: Array<{ item: T; resolve: () => void; reject: (err: unknown) => void }> = [];
  private running = false;

  constructor(private readonly run: (items: T[]) => Promise<void>) {}

  call(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.running) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.running = true;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0);
      try {
        await this.run(batch.map((b) => b.item));
        for (const b of batch) b.resolve();
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    this.running = false;
  }
}
