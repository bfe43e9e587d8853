import type { Heartbeat } from '@hcp/host-protocol';
import { type AgentLog, describeError } from './agent-log';
import { Backoff, sleep } from './backoff';
import { isCredentialRejected, type OnCredentialRejected } from './credential-rejection';
import type { HcpClient } from './hcp-client';
import type { HostDriver } from './host-driver';

export interface HeartbeatLoopOptions {
  client: HcpClient;
  driver: HostDriver;
  intervalMs: number;
  agentVersion: string;
  log: AgentLog;
  onCredentialRejected: OnCredentialRejected;
  /** Called once, when HCP first accepts a heartbeat: the host is live for placement from then on. */
  onFirstAccepted?: () => void;
}

/** Tells HCP every interval that this host is alive, with its capacity; never gives up but on a 401. */
export class HeartbeatLoop {
  private readonly stopper = new AbortController();
  private done: Promise<void> = Promise.resolve();
  private accepted = 0;

  constructor(private readonly options: HeartbeatLoopOptions) {}

  start(): void {
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    await this.done;
  }

  private async loop(): Promise<void> {
    const { intervalMs, log } = this.options;
    // A missed heartbeat is retried sooner than the interval, but never more often than every second.
    const backoff = new Backoff({ initialMs: Math.min(1_000, intervalMs), maxMs: intervalMs, jitter: 0.2 });
    while (!this.stopper.signal.aborted) {
      let delay = intervalMs;
      try {
        await this.beat();
        if (backoff.failures > 0) log.info('heartbeat accepted again');
        backoff.reset();
        this.accepted += 1;
        if (this.accepted === 1) this.options.onFirstAccepted?.();
      } catch (err) {
        if (this.stopper.signal.aborted) break;
        if (isCredentialRejected(err)) {
          this.options.onCredentialRejected(err);
          return;
        }
        delay = backoff.next();
        log.warn(`heartbeat failed: ${describeError(err)}; next try in ${delay} ms`);
      }
      await sleep(delay, this.stopper.signal);
    }
  }

  private async beat(): Promise<void> {
    const { client, driver, intervalMs, agentVersion } = this.options;
    const ctx = { deadline: new Date(Date.now() + intervalMs), signal: this.stopper.signal };
    const capacity = await driver.hostCapacity(ctx);
    let guests: number | undefined;
    try {
      guests = driver.listVms ? (await driver.listVms(ctx)).length : undefined;
    } catch {
      // The guest count is for ops' eyes; the heartbeat still says the host is alive without it.
    }
    const body: Heartbeat = {
      capacity,
      driver: driver.type,
      capabilities: driver.capabilities() as unknown as Record<string, unknown>,
      agent_version: agentVersion,
      ...(guests === undefined ? {} : { guests }),
    };
    await client.heartbeat(body, this.stopper.signal);
  }
}
