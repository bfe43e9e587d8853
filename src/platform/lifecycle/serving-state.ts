import type { ServerResponse } from 'node:http';

/** A request being answered, linked to the others in flight. */
interface InFlight {
  res: ServerResponse | null;
  prev: InFlight | null;
  next: InFlight | null;
}

/**
 * Whether this process still takes requests, and the requests it is answering. One per process: the
 * signal handler turns it to draining, readiness and the HTTP gate read it.
 *
 * The requests in flight are a list linked through their entries, each unlinked and emptied when its
 * answer is done, rather than a Set: a Set's table that outlives two scavenges (or a major GC) is old, and
 * when V8 replaces it (every few requests under load) the obsolete table keeps a pointer to its successor
 * and the answers it held. The scavenger keeps whatever an old object points at, so every later table and
 * its answers (headers, bodies, request objects) lived until the next major GC: ~240 KB promoted per
 * scavenge under detail reads, against ~3 KB with this list (bench/README.md, the twenty-fourth session).
 */
export class ServingState {
  private phase: 'serving' | 'draining' = 'serving';
  private newest: InFlight | null = null;
  private count = 0;
  private idle: Array<() => void> = [];

  get draining(): boolean {
    return this.phase === 'draining';
  }

  get requestsInFlight(): number {
    return this.count;
  }

  /**
   * From now on new requests are refused; those being answered end their connection after their
   * answer, so no keep-alive connection outlives the drain.
   */
  drain(): void {
    this.phase = 'draining';
    for (let entry = this.newest; entry !== null; entry = entry.next) {
      if (!entry.res!.headersSent) entry.res!.setHeader('Connection', 'close');
    }
  }

  /** Counts a request until its answer is sent or its connection is gone. */
  track(res: ServerResponse): void {
    const entry: InFlight = { res, prev: null, next: this.newest };
    if (this.newest !== null) this.newest.prev = entry;
    this.newest = entry;
    this.count += 1;
    const done = () => {
      if (entry.res === null) return;
      this.unlink(entry);
      if (this.count > 0) return;
      for (const resolve of this.idle.splice(0)) resolve();
    };
    res.once('finish', done);
    res.once('close', done);
  }

  /** Resolves once no request is being answered. */
  whenIdle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private unlink(entry: InFlight): void {
    if (entry.prev === null) this.newest = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next !== null) entry.next.prev = entry.prev;
    // An entry that was promoted points at nothing once done, so it cannot keep a later one alive.
    entry.res = entry.prev = entry.next = null;
    this.count -= 1;
  }
}

export const servingState = new ServingState();
