/**
 * Runs work for one key (a driver's HCP id) one after another in this process, so a second create waits
 * and finds the first's VM instead of racing it; work for other keys runs alongside. A failed run does
 * not stop the next one. The map holds only keys with work pending.
 */
export class PerKeyQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return run;
  }
}
