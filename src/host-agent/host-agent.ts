import type { AgentLog } from './agent-log';
import { ClaimLoop } from './claim-loop';
import type { HcpClient, HcpStatusError } from './hcp-client';
import { HeartbeatLoop } from './heartbeat-loop';
import type { HostDriver } from './host-driver';
import { HostCallRunner } from './host-call-runner';

export interface HostAgentOptions {
  hostId: string;
  /** A client that carries this host's credential. */
  client: HcpClient;
  driver: HostDriver;
  log: AgentLog;
  concurrency: number;
  heartbeatIntervalMs: number;
  claimWaitMs: number;
  agentVersion: string;
  consoleHost?: string;
}

/** Why the agent stopped: told to (a signal), or HCP refused its credential (nothing else ends it). */
export type AgentEnd =
  | { reason: 'stopped'; unfinished: number }
  | { reason: 'credential_rejected'; error: HcpStatusError };

/** The enrolled agent at work: heartbeats and the claim loop side by side, over one driver. */
export class HostAgent {
  private readonly heartbeat: HeartbeatLoop;
  private readonly claims: ClaimLoop;
  private rejected: HcpStatusError | undefined;
  private resolveEnd!: (end: AgentEnd) => void;
  private stopping = false;
  /** Settles when the agent has stopped, for either reason. */
  readonly ended: Promise<AgentEnd> = new Promise((resolve) => {
    this.resolveEnd = resolve;
  });

  constructor(private readonly options: HostAgentOptions) {
    const onCredentialRejected = (err: HcpStatusError) => this.credentialRejected(err);
    this.heartbeat = new HeartbeatLoop({
      client: options.client,
      driver: options.driver,
      intervalMs: options.heartbeatIntervalMs,
      agentVersion: options.agentVersion,
      log: options.log,
      onCredentialRejected,
      onFirstAccepted: () =>
        options.log.info(
          `ready: host ${options.hostId} heartbeats to HCP and claims up to ${options.concurrency} calls at once`,
        ),
    });
    const runner = new HostCallRunner({
      client: options.client,
      driver: options.driver,
      log: options.log,
      consoleHost: options.consoleHost,
      onCredentialRejected,
    });
    this.claims = new ClaimLoop({
      client: options.client,
      run: (call) => runner.run(call),
      concurrency: options.concurrency,
      claimWaitMs: options.claimWaitMs,
      log: options.log,
      onCredentialRejected,
    });
  }

  start(): void {
    this.options.log.info(
      `host ${this.options.hostId} starting (agent ${this.options.agentVersion}, driver ${this.options.driver.type})`,
    );
    this.heartbeat.start();
    this.claims.start();
  }

  /** Stops claiming, lets running calls finish for up to `graceMs`, then stops heartbeating. */
  async stop(graceMs: number): Promise<AgentEnd> {
    if (!this.stopping) {
      this.stopping = true;
      const unfinished = await this.claims.stop(graceMs);
      await this.heartbeat.stop();
      this.options.client.close();
      this.resolveEnd(
        this.rejected ? { reason: 'credential_rejected', error: this.rejected } : { reason: 'stopped', unfinished },
      );
    }
    return this.ended;
  }

  private credentialRejected(err: HcpStatusError): void {
    if (this.rejected) return;
    this.rejected = err;
    this.options.log.error(
      `HCP refused this host's credential (401${err.hcpMessage ? `: ${err.hcpMessage}` : ''}): it was revoked or rotated away; stopping`,
    );
    // Nothing this host runs can be reported with a dead credential: no grace.
    void this.stop(0);
  }
}
