import type { ServerResponse } from 'node:http';

/**
 * Whether this process still takes requests, and the requests it is answering. One per process: the
 * signal handler turns it to draining, readiness and the HTTP gate read it.
 */
export class ServingState {
  private phase: 'serving' | 'draining' = 'serving';
  private readonly inFlight = new Set<ServerResponse>();
  private idle: Array<() => void> = [];

  get draining(): boolean {
    return this.phase === 'draining';
  }

  get requestsInFlight(): number {
    return this.inFlight.size;
  }

  /**
   * From now on new requests are refused; those being answered end their connection after their
   * answer, so no keep-alive connection outlives the drain.
   */
  drain(): void {
    this.phase = 'draining';
    for (const res of this.inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
  }

  /** Counts a request until its answer is sent or its connection is gone. */
  track(res: ServerResponse): void {
    this.inFlight.add(res);
    const done = () => {
      if (!this.inFlight.delete(res) || this.inFlight.size > 0) return;
      for (const resolve of this.idle.splice(0)) resolve();
    };
    res.once('finish', done);
    res.once('close', done);
  }

  /** Resolves once no request is being answered. */
  whenIdle(): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }
}

export const servingState = new ServingState();
