/**
 * Gathers the requests a process makes at about the same time into batches, each served by one
 * statement or transaction: requests made in one tick go together, at most `maxInFlight` batches run at
 * once, and requests made while all of them run go together in the next. A request made when a slot is
 * free waits one tick, no more; every batch starts after the requests it carries were made.
 *
 * `take` picks, from the waiting requests in the order they were made, those the next batch carries (the
 * indexes, at least one); the others keep their place. `serve` answers each request of a batch with a
 * settled result of its own; a batch that fails as a whole fails the requests it carried, only those.
 */
export class TickBatches<Request, Answer> {
  private waiting: Array<Waiter<Request, Answer>> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly serve: (requests: Request[]) => Promise<Array<PromiseSettledResult<Answer>>>,
    private readonly maxInFlight: number,
    private readonly take: (waiting: readonly Request[]) => ReadonlySet<number> = everything,
  ) {}

  ask(request: Request): Promise<Answer> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ request, resolve, reject });
      if (!this.scheduled && this.inFlight < this.maxInFlight) {
        this.scheduled = true;
        // The requests of one Promise.all, or of the continuations one answer wakes, are made in one tick.
        process.nextTick(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    while (this.waiting.length > 0 && this.inFlight < this.maxInFlight) {
      const taken = this.take(this.waiting.map((waiter) => waiter.request));
      const batch = this.waiting.filter((_, i) => taken.has(i));
      this.waiting = this.waiting.filter((_, i) => !taken.has(i));
      this.inFlight += 1;
      void this.run(batch);
    }
  }

  private async run(batch: Array<Waiter<Request, Answer>>): Promise<void> {
    try {
      const results = await this.serve(batch.map((waiter) => waiter.request));
      for (const [i, waiter] of batch.entries()) {
        const result = results[i];
        if (result?.status === 'fulfilled') waiter.resolve(result.value);
        else waiter.reject(result ? result.reason : new Error('a batched request got no answer'));
      }
    } catch (err) {
      for (const waiter of batch) waiter.reject(err);
    } finally {
      this.inFlight -= 1;
      this.flush();
    }
  }
}

interface Waiter<Request, Answer> {
  request: Request;
  resolve: (answer: Answer) => void;
  reject: (err: unknown) => void;
}

const everything = (waiting: readonly unknown[]): ReadonlySet<number> => new Set(waiting.keys());
