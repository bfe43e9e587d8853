/**
 * Group commit for a statement that takes many items: the first call runs at once; calls made while a
 * run is in flight wait for it and then go together in the next run. One call alone costs no wait; many
 * at once cost one round trip per run instead of one each. Every call of a run gets the run's result
 * (a read that answers for all its items); a failed run fails every call it carried. A call never gets
 * the result of a run that started before it, so what it reads is at least as new as the call.
 */
export class GroupedCalls<T, R = void> {
  private pending: Array<{ item: T; resolve: (result: R) => void; reject: (err: unknown) => void }> = [];
  private running = false;

  constructor(private readonly run: (items: T[]) => Promise<R>) {}

  call(item: T): Promise<R> {
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
        const result = await this.run(batch.map((b) => b.item));
        for (const b of batch) b.resolve(result);
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    this.running = false;
  }
}
