import { Injectable, Logger } from '@nestjs/common';
import {
  decideJob,
  JobCommand,
  HcpError,
  HcpErrorShape,
  JobState,
  recordVmOutcome,
  toHcpError,
  VmOperation,
  VmOutcome,
  VmState,
} from '@hcp/domain';
import { CallContext, ProviderDriver, VmAddress } from '@hcp/providers';
import { Loaded } from '../../platform/event-sourcing/aggregate-repository';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { DriverRegistry } from '../../ops/drivers/driver-registry';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { VmRepository } from '../vm.repository';
import { JobRepository } from '../../jobs/job.repository';
import { LeasedJob } from '../../jobs/queue/job-queue';

export interface JobPolicy {
  maxAttempts: number;
  retryBackoffMs: number;
  attemptTimeoutMs: number;
}

/** What the worker does with the queue row afterwards. */
export type JobExecution = { kind: 'finished' } | { kind: 'retry'; at: Date } | { kind: 'lease_lost' };

const WORKER_ACTOR = 'hcp-worker';
const MAX_BACKOFF_MS = 5 * 60_000;

/**
 * The process manager of VM jobs. Each step is recorded as events before the next one starts, so a
 * crash anywhere leaves a state from which the next lease continues: a running job whose lease expired
 * has its attempt written off, a VM outcome already recorded is not redone, and the driver call itself
 * is idempotent (it finds the VM by its HCP id).
 */
@Injectable()
export class VmJobExecutor {
  private readonly logger = new Logger(VmJobExecutor.name);

  constructor(
    private readonly jobs: JobRepository,
    private readonly vms: VmRepository,
    private readonly drivers: DriverRegistry,
    private readonly metrics: HcpMetrics,
  ) {}

  async execute(lease: LeasedJob, worker: string, policy: JobPolicy, signal: AbortSignal): Promise<JobExecution> {
    let job = await this.jobs.load(lease.job_id);
    const initial = job.state;
    if (!initial || initial.status === 'succeeded' || initial.status === 'failed') return { kind: 'finished' };
    const traceId = initial.trace_id;

    if (initial.status === 'running') {
      // The previous holder died or hung with the job running: that attempt counts as failed.
      const error = new HcpError('PROVIDER_TIMEOUT', 'the worker running this job stopped answering').toShape();
      this.metrics.leaseExpiries.inc();
      job = await this.step(job, { type: 'fail_attempt', error, retry_at: new Date().toISOString() }, traceId);
    }
    if (stateOf(job).attempts >= policy.maxAttempts) {
      await this.fail(job, stateOf(job).error ?? toHcpError(null).toShape(), traceId);
      return { kind: 'finished' };
    }
    job = await this.step(job, { type: 'start', worker }, traceId);
    const running = stateOf(job);

    const vm = (await this.vms.load(running.resource_id)).state;
    if (!vm || vm.pending_job_id !== running.id) {
      // The VM already settled this job (recorded before a crash) or a newer request superseded it.
      const recordedError = vm?.last_job_id === running.id ? vm.last_error : null;
      await this.step(job, recordedError ? { type: 'fail', error: recordedError } : { type: 'succeed' }, traceId);
      return { kind: 'finished' };
    }

    const operation = operationOf(running);
    let outcome: VmOutcome;
    let providerType = 'unknown';
    const timer = this.metrics.providerCalls.startTimer();
    try {
      const driver = await this.drivers.driverFor(vm.placement.provider_id, vm.placement.cluster_id);
      providerType = driver.type;
      const call: CallContext = { deadline: new Date(Date.now() + policy.attemptTimeoutMs), signal, trace_id: running.trace_id };
      outcome = { type: 'succeeded', job_id: running.id, operation, ...(await this.callDriver(driver, operation, vm, running, call)) };
      timer({ provider: providerType, operation, outcome: 'ok' });
    } catch (err) {
      const error = toHcpError(err);
      timer({ provider: providerType, operation, outcome: error.code });
      if (signal.aborted) return { kind: 'lease_lost' };
      if (!(err instanceof HcpError)) this.logger.error(`job ${running.id}: driver failed unexpectedly: ${String(err)}`);
      if (error.retryable && running.attempts < policy.maxAttempts) {
        const at = new Date(Date.now() + backoff(policy.retryBackoffMs, running.attempts));
        await this.step(job, { type: 'fail_attempt', error: error.toShape(), retry_at: at.toISOString() }, traceId);
        this.metrics.jobRetries.inc({ code: error.code });
        return { kind: 'retry', at };
      }
      await this.fail(job, error.toShape(), traceId);
      this.metrics.jobsFinished.inc({ type: running.type, provider: providerType, outcome: error.code });
      return { kind: 'finished' };
    }
    if (signal.aborted) return { kind: 'lease_lost' };
    await this.vms.update(running.resource_id, (state) => recordVmOutcome(state, outcome), eventContext(WORKER_ACTOR, traceId));
    await this.step(job, { type: 'succeed' }, traceId);
    this.metrics.jobsFinished.inc({ type: running.type, provider: providerType, outcome: 'succeeded' });
    return { kind: 'finished' };
  }

  private async callDriver(
    driver: ProviderDriver,
    operation: VmOperation,
    vm: VmState,
    job: JobState,
    call: CallContext,
  ): Promise<{ addresses: VmAddress[]; power_state?: 'running' | 'stopped'; provider_ref?: Record<string, unknown> }> {
    const force = job.params.force === true;
    switch (operation) {
      case 'create': {
        const request = await this.vms.creationRequest(vm.id);
        const created = await driver.createVm(
          {
            hcp_id: vm.id,
            project_id: vm.project_id,
            name: vm.name,
            image_ref: vm.placement.image_ref,
            ...vm.resources,
            ssh_keys: request.ssh_keys,
            ...(request.user_data !== undefined ? { user_data: request.user_data } : {}),
            tags: vm.tags,
            power_on: request.power_on,
          },
          call,
        );
        return {
          addresses: created.addresses,
          power_state: created.power_state === 'running' ? 'running' : 'stopped',
          provider_ref: created.provider_ref,
        };
      }
      case 'start':
        return { addresses: (await driver.startVm(vm.id, call)).addresses };
      case 'stop':
        await driver.stopVm(vm.id, force, call);
        return { addresses: [] };
      case 'reboot':
        return { addresses: (await driver.rebootVm(vm.id, force, call)).addresses };
      case 'delete':
        await driver.deleteVm(vm.id, call);
        return { addresses: [] };
    }
  }

  /** The VM settles where a failed operation leaves it, then the job fails with the taxonomy error. */
  private async fail(job: Loaded<JobState>, error: HcpErrorShape, traceId: string): Promise<void> {
    const state = stateOf(job);
    await this.vms.update(state.resource_id, (vm) => recordVmOutcome(vm, { type: 'failed', job_id: state.id, operation: operationOf(state), error }), eventContext(WORKER_ACTOR, traceId));
    await this.step(job, { type: 'fail', error }, traceId);
  }

  /** Records one step of the job, stamped with the time it happened. */
  private step(job: Loaded<JobState>, command: JobCommand, traceId: string): Promise<Loaded<JobState>> {
    return this.jobs.append(job, decideJob(job.state, command), eventContext(WORKER_ACTOR, traceId));
  }
}

const stateOf = (job: Loaded<JobState>): JobState => job.state!;
const operationOf = (job: JobState): VmOperation => job.type.slice('vm.'.length) as VmOperation;

function backoff(baseMs: number, attempt: number): number {
  const exponential = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential * (0.8 + Math.random() * 0.4));
}
