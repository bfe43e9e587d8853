import { HcpError, toHcpError } from '@hcp/domain';
import { type ClaimedHostCall, type HostCallOutcome, hostCallRequestSchema } from '@hcp/host-protocol';
import { type AgentLog, describeError } from './agent-log';
import { Backoff, sleep } from './backoff';
import { isCredentialRejected, type OnCredentialRejected } from './credential-rejection';
import { type HcpClient, HcpStatusError, isTransient } from './hcp-client';
import type { HostDriver } from './host-driver';
import { runHostCall } from './run-host-call';

export interface HostCallRunnerOptions {
  client: HcpClient;
  driver: HostDriver;
  log: AgentLog;
  consoleHost?: string;
  onCredentialRejected: OnCredentialRejected;
}

/** Renewals come at a third of the lease, so two may be lost before the lease runs out. */
export const renewIntervalOf = (leaseMs: number): number => Math.max(50, Math.floor(leaseMs / 3));

/**
 * Runs one claimed call to its reported outcome: validates it, runs it on the driver under a context
 * aborted at its deadline or when HCP says the lease is gone, renews the lease while it runs, and reports
 * the outcome until HCP has it, the call is another claim's, or its deadline has passed.
 */
export class HostCallRunner {
  constructor(private readonly options: HostCallRunnerOptions) {}

  async run(call: ClaimedHostCall): Promise<void> {
    const { log } = this.options;
    const deadline = new Date(call.deadline);
    const parsed = hostCallRequestSchema.safeParse(call.request);
    const leaseMs = Number(call.lease_ms);
    if (!parsed.success || Number.isNaN(deadline.getTime()) || !(leaseMs > 0)) {
      const problems = parsed.success
        ? ['deadline and lease_ms must be a time and a positive number']
        : parsed.error.issues.map((i) => `${i.path.join('.') || 'request'}: ${i.message}`);
      log.warn(`call ${call.call_id} is not a valid host call (${problems.join('; ')}); reporting it failed`);
      const error = new HcpError(
        'INVALID_REQUEST',
        'the host agent cannot run this call: it is not a valid host call',
        {
          problems,
        },
      );
      await this.report(
        call,
        `call ${call.call_id} (invalid)`,
        { status: 'failed', error: error.toShape() },
        Date.now() + 30_000,
      );
      return;
    }
    const request = parsed.data;
    const what = `call ${call.call_id} (${request.op}${'hcp_id' in request ? ` ${request.hcp_id}` : ''})`;
    log.info(`${what} claimed${call.reclaimed ? ' again after an earlier claim ran out of lease' : ''}`);

    const controller = new AbortController();
    const deadlineTimer = setTimeout(
      () => controller.abort(new HcpError('PROVIDER_TIMEOUT', 'the host call ran past its deadline')),
      Math.max(0, deadline.getTime() - Date.now()),
    );
    const renewal = this.keepRenewing(call.call_id, leaseMs, controller, what);
    let outcome: HostCallOutcome;
    try {
      const value = await runHostCall(
        this.options.driver,
        request,
        { deadline, signal: controller.signal, ...(call.trace_id ? { trace_id: call.trace_id } : {}) },
        { consoleHost: this.options.consoleHost },
      );
      outcome = { status: 'succeeded', value: value ?? null };
    } catch (err) {
      // What HCP gets is the taxonomy's shape; anything else is only INTERNAL_ERROR there, so say it here.
      if (!(err instanceof HcpError)) log.error(`${what} failed in the driver: ${describeError(err)}`);
      outcome = { status: 'failed', error: boundedShape(toHcpError(err)) };
    } finally {
      clearTimeout(deadlineTimer);
      renewal.stop();
    }
    if (renewal.lost()) {
      log.warn(`${what}: HCP gave the call to another claim while it ran; its outcome is dropped`);
      return;
    }
    await this.report(call, what, outcome, deadline.getTime());
  }

  private keepRenewing(callId: string, leaseMs: number, controller: AbortController, what: string) {
    const { client, log } = this.options;
    let lease = leaseMs;
    let stopped = false;
    let lost = false;
    let timer: NodeJS.Timeout | undefined;
    const schedule = () => {
      if (!stopped) timer = setTimeout(renew, renewIntervalOf(lease));
    };
    const renew = async () => {
      try {
        const answer = await client.renew(callId);
        if (typeof answer.lease_ms === 'number' && answer.lease_ms > 0) lease = answer.lease_ms;
      } catch (err) {
        if (err instanceof HcpStatusError && err.status === 409) {
          lost = true;
          log.warn(`${what}: HCP says this host no longer holds the call (409); aborting it`);
          controller.abort(new HcpError('CONFLICT', 'the host call was handed to another claim'));
          return;
        }
        if (isCredentialRejected(err)) {
          this.options.onCredentialRejected(err);
          return;
        }
        // The lease outlives two missed renewals; HCP answering again in time keeps the call.
        log.warn(`renewing ${what} failed: ${describeError(err)}`);
      }
      schedule();
    };
    schedule();
    return {
      stop: () => {
        stopped = true;
        clearTimeout(timer);
      },
      lost: () => lost,
    };
  }

  private async report(call: ClaimedHostCall, what: string, first: HostCallOutcome, until: number): Promise<void> {
    let outcome = first;
    const { client, log } = this.options;
    const backoff = new Backoff({ initialMs: 250, maxMs: 5_000, jitter: 0.2 });
    for (;;) {
      try {
        await client.reportOutcome(call.call_id, outcome);
        if (backoff.failures > 0) log.info(`${what}: outcome reported after ${backoff.failures} failed tries`);
        log.info(
          `${what} ${outcome.status}${outcome.status === 'failed' ? ` (${outcome.error.code}: ${outcome.error.message})` : ''}`,
        );
        return;
      } catch (err) {
        if (err instanceof HcpStatusError && err.status === 409) {
          log.warn(`${what}: HCP no longer holds the call for this host (409); outcome dropped`);
          return;
        }
        if (isCredentialRejected(err)) {
          this.options.onCredentialRejected(err);
          return;
        }
        if (!isTransient(err)) {
          log.error(`${what}: HCP refused its outcome (${describeError(err)})`);
          // Left unreported, the call would be claimed and refused again until its deadline; a plain
          // failure ends it now (the job's own retry policy decides what follows).
          if (outcome.status === 'succeeded' || outcome.error.details !== undefined) {
            outcome = {
              status: 'failed',
              error: new HcpError('INTERNAL_ERROR', 'HCP refused the host agent’s outcome').toShape(),
            };
            continue;
          }
          return;
        }
        const delay = backoff.next();
        if (Date.now() + delay > until) {
          log.error(
            `${what}: could not report its outcome before the call's deadline (${describeError(err)}); HCP hands the call out again when its lease runs out`,
          );
          return;
        }
        log.warn(`reporting the outcome of ${what} failed: ${describeError(err)}; next try in ${delay} ms`);
        await sleep(delay);
      }
    }
  }
}

/** The protocol bounds an error message (hostCallOutcomeSchema); a driver's longer one is cut, not refused. */
function boundedShape(error: HcpError) {
  const shape = error.toShape();
  return shape.message.length > 4_000 ? { ...shape, message: `${shape.message.slice(0, 4_000)}…` } : shape;
}
