import type { ClaimedHostCall } from '@hcp/host-protocol';
import { type AgentLog, describeError } from './agent-log';
import { Backoff, sleep } from './backoff';
import { isCredentialRejected, type OnCredentialRejected } from './credential-rejection';
import type { HcpClient } from './hcp-client';

export interface ClaimLoopOptions {
  client: HcpClient;
  /** Runs one claimed call to its reported outcome; never rejects (a rejection is logged). */
  run(call: ClaimedHostCall): Promise<void>;
  concurrency: number;
  claimWaitMs: number;
  log: AgentLog;
  onCredentialRejected: OnCredentialRejected;
}

/**
 * Long-polls HCP for calls with as many free slots as the agent has, and starts each one it gets. A failed
 * claim (HCP down or restarting, a bad answer) is logged and retried with backoff; only a 401 ends it.
 */
export class ClaimLoop {
  private readonly running = new Set<Promise<void>>();
  private readonly stopper = new AbortController();
  private done: Promise<void> = Promise.resolve();
  private slotFreed: (() => void) | undefined;

  constructor(private readonly options: ClaimLoopOptions) {}

  start(): void {
    this.done = this.loop();
  }

  get runningCalls(): number {
    return this.running.size;
  }

  /**
   * Stops claiming and waits up to `graceMs` for the running calls; returns how many are still running
   * (their leases run out at HCP, which hands them out again).
   */
  async stop(graceMs: number): Promise<number> {
    this.stopper.abort();
    await this.done;
    if (this.running.size > 0) {
      const grace = new AbortController();
      await Promise.race([Promise.allSettled([...this.running]), sleep(graceMs, grace.signal)]);
      grace.abort();
    }
    return this.running.size;
  }

  private async loop(): Promise<void> {
    const { client, concurrency, claimWaitMs, log } = this.options;
    const signal = this.stopper.signal;
    const backoff = new Backoff({ initialMs: 500, maxMs: 30_000, jitter: 0.2 });
    while (!signal.aborted) {
      const free = concurrency - this.running.size;
      if (free <= 0) {
        await this.slotFreedOrStopped();
        continue;
      }
      const asked = Date.now();
      let calls: ClaimedHostCall[];
      try {
        calls = await client.claim({ wait_ms: claimWaitMs, max: free }, signal);
      } catch (err) {
        if (signal.aborted) break;
        if (isCredentialRejected(err)) {
          this.options.onCredentialRejected(err);
          return;
        }
        const delay = backoff.next();
        log.warn(`claiming calls failed: ${describeError(err)}; next try in ${delay} ms`);
        await sleep(delay, signal);
        continue;
      }
      if (backoff.failures > 0) log.info('claiming calls works again');
      backoff.reset();
      for (const call of calls) this.track(call);
      // An HCP that answers an empty claim at once (no long poll) must not be asked in a tight loop.
      const took = Date.now() - asked;
      if (calls.length === 0 && took < 1_000) await sleep(Math.min(1_000, Math.max(claimWaitMs, 200)) - took, signal);
    }
  }

  private track(call: ClaimedHostCall): void {
    const running = this.options.run(call).catch((err) => {
      this.options.log.error(`call ${call?.call_id} ended with an unexpected error: ${describeError(err)}`);
    });
    this.running.add(running);
    void running.finally(() => {
      this.running.delete(running);
      this.slotFreed?.();
    });
  }

  private slotFreedOrStopped(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.slotFreed = undefined;
        this.stopper.signal.removeEventListener('abort', done);
        resolve();
      };
      this.slotFreed = done;
      this.stopper.signal.addEventListener('abort', done, { once: true });
    });
  }
}
