import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import {
  conflict,
  decideVm,
  EventContext,
  HcpError,
  HcpErrorShape,
  JobState,
  recordVmOutcome,
  toHcpError,
  VmCommand,
  VmCreateRequestedData,
  VmEvent,
  VmOperation,
  VmOutcome,
  VmState,
} from '@hcp/domain';
import { CallContext, ProviderDriver, VmAddress } from '@hcp/providers';
import { HcpConfig } from '../../config/hcp-config';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { HCP_CONFIG } from '../../platform/tokens';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { DriverRegistry } from '../../ops';
import { JOB_WORKER_ACTOR, JobAttempt, JobClosing, JobExecutor, JobWork } from '../../jobs';
import { FROM_REMEMBERED } from '../../platform/event-sourcing/aggregate-repository';
import { VmRepository } from '../vm.repository';

/**
 * Runs VM jobs (`vm.create`, `vm.start`, ...): calls the VM's provider driver and records the outcome on
 * the VM. The driver call is idempotent (it finds the VM by its HCP id), so a retried attempt never
 * creates a second VM.
 */
@Injectable()
export class VmJobExecutor implements JobExecutor {
  private readonly logger = new Logger('vm-jobs');
  /**
   * How long the removal of a failed create's VM may take. Whoever fails the job holds its row for a
   * lease without renewing it (the deadline sweep, ops mark-failed), so the cleanup ends well within one.
   */
  private readonly cleanupTimeoutMs: number;

  constructor(
    private readonly vms: VmRepository,
    @Inject(DriverRegistry) private readonly drivers: Pick<DriverRegistry, 'driverFor'>,
    private readonly metrics: HcpMetrics,
    @Optional() @Inject(HCP_CONFIG) config?: Pick<HcpConfig, 'jobs'>,
  ) {
    this.cleanupTimeoutMs = Math.max(1000, Math.floor(((config?.jobs.leaseMs ?? 30_000) * 2) / 3));
  }

  async perform(job: JobState, attempt: JobAttempt): Promise<JobWork> {
    const operation = operationOf(job);
    // A create's request (SSH keys, user data: not in the folded state) is asked together with the VM, so
    // both come in one read; it is used only if the VM still awaits this job.
    const requested = operation === 'create' ? this.vms.creationRequest(job.resource_id, { whole: true }) : undefined;
    requested?.catch(() => undefined);
    const vm = (await this.vms.load(job.resource_id)).state;
    if (!vm || vm.pending_job_id !== job.id) {
      // The VM already settled this job (recorded before a crash), maybe with newer requests since: the
      // job ends as its own operation did, which only the VM's history still tells.
      return { kind: 'settled', error: outcomeOfJob(vm ? await this.vms.history(vm.id) : [], job.id) };
    }
    let providerType = 'unknown';
    const timer = this.metrics.providerCalls.startTimer();
    try {
      const [driver, request] = await Promise.all([
        this.drivers.driverFor(vm.placement.provider_id, vm.placement.cluster_id),
        requested,
      ]);
      providerType = driver.type;
      const call: CallContext = {
        deadline: attempt.deadline,
        signal: attempt.signal,
        trace_id: attempt.trace_id,
        recorded: attempt.recorded,
        record: attempt.record,
      };
      const outcome: VmOutcome = {
        type: 'succeeded',
        job_id: job.id,
        operation,
        ...(await this.callDriver(driver, operation, vm, job, call, request)),
      };
      timer({ provider: providerType, operation, outcome: 'ok' });
      return { kind: 'done', target: providerType, record: (closing) => this.record(job, outcome, closing) };
    } catch (err) {
      timer({ provider: providerType, operation, outcome: toHcpError(err).code });
      return { kind: 'failed', target: providerType, error: err };
    }
  }

  /**
   * A create that failed for good first removes what the provider made of it (a half-configured clone, a
   * VM whose start failed), then the VM records the failure in `error` with its cause; a removal that
   * fails is in the cause's details (`cleanup: 'failed'`), and the reconcile scan lists the VM's resource
   * as an orphan for ops.
   */
  async recordFailure(job: JobState, error: HcpErrorShape): Promise<void> {
    const operation = operationOf(job);
    const cause = operation === 'create' ? await this.cleanUpFailedCreate(job, error) : error;
    await this.record(job, { type: 'failed', job_id: job.id, operation, error: cause });
  }

  /**
   * Ops retry a failed job: the VM takes the job's operation again under the same job id, if the VM
   * decider allows it from where the failure left the VM. A create cannot be redone on a VM that exists.
   */
  async reopen(job: JobState, context: EventContext): Promise<void> {
    const operation = operationOf(job);
    if (operation === 'create')
      throw conflict('a failed create cannot be retried: delete the VM and create it again', { type: job.type });
    try {
      await this.vms.update(
        job.resource_id,
        // An earlier recovery that got this far reopened it already: nothing more to decide.
        (vm) => (vm?.pending_job_id === job.id ? [] : decideVm(vm, commandOf(operation, job))),
        context,
      );
    } catch (err) {
      if (err instanceof HcpError && err.code === 'NOT_FOUND') throw conflict('the VM of this job is gone');
      throw err;
    }
  }

  /**
   * Removes the provider's VM of a create that failed, by its HCP id (deleteVm is idempotent: nothing
   * there is nothing to do, so a failure recorded twice removes once). Only while the VM still awaits this
   * create: a VM that settled it, or that a newer request owns (its delete), is left to that.
   */
  private async cleanUpFailedCreate(job: JobState, error: HcpErrorShape): Promise<HcpErrorShape> {
    const vm = (await this.vms.load(job.resource_id)).state;
    if (!vm || vm.pending_job_id !== job.id) {
      this.metrics.failedCreateCleanups.inc({ outcome: 'skipped' });
      return error;
    }
    const abort = new AbortController();
    const timer = setTimeout(
      () => abort.abort(new HcpError('PROVIDER_TIMEOUT', 'the cleanup of the failed create ran out of time')),
      this.cleanupTimeoutMs,
    );
    try {
      const driver = await this.drivers.driverFor(vm.placement.provider_id, vm.placement.cluster_id);
      await driver.deleteVm(vm.id, {
        deadline: new Date(Date.now() + this.cleanupTimeoutMs),
        signal: abort.signal,
        trace_id: job.trace_id,
        recorded: job.facts ?? {},
      });
      this.metrics.failedCreateCleanups.inc({ outcome: 'removed' });
      return withDetails(error, { cleanup: 'removed' });
    } catch (err) {
      const failure = toHcpError(err);
      this.metrics.failedCreateCleanups.inc({ outcome: 'failed' });
      this.logger.warn(`VM ${vm.id}: removing what its failed create left at the provider failed: ${failure.message}`);
      return withDetails(error, {
        cleanup: 'failed',
        cleanup_error: { code: failure.code, message: failure.message },
      });
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Records the outcome on the VM, with `closing` (the job's end) in its commit; true when that committed
   * too. Decided on the VM as this process last saw it (loaded for the attempt): a VM with a job running
   * is rarely written by anyone else, so its stream need not be read again first.
   */
  private async record(job: JobState, outcome: VmOutcome, closing?: JobClosing): Promise<boolean> {
    const context = eventContext(JOB_WORKER_ACTOR, job.trace_id);
    const recorded = await this.vms.update(
      job.resource_id,
      (state) => recordVmOutcome(state, outcome),
      context,
      FROM_REMEMBERED,
      closing && (() => closing(context.occurred_at)),
    );
    return recorded.alongside;
  }

  private async callDriver(
    driver: ProviderDriver,
    operation: VmOperation,
    vm: VmState,
    job: JobState,
    call: CallContext,
    request: VmCreateRequestedData | undefined,
  ): Promise<{ addresses: VmAddress[]; power_state?: 'running' | 'stopped'; provider_ref?: Record<string, unknown> }> {
    const force = job.params.force === true;
    switch (operation) {
      case 'create': {
        if (!request) throw new HcpError('INTERNAL_ERROR', `VM ${vm.id}: a create without its request`);
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
}

const withDetails = (error: HcpErrorShape, details: Record<string, unknown>): HcpErrorShape => ({
  ...error,
  details: { ...error.details, ...details },
});

const operationOf = (job: JobState): VmOperation => job.type.slice('vm.'.length) as VmOperation;

function commandOf(operation: Exclude<VmOperation, 'create'>, job: JobState): VmCommand {
  const force = job.params.force === true;
  if (operation === 'stop' || operation === 'reboot') return { type: operation, job_id: job.id, force };
  return { type: operation, job_id: job.id };
}

const OUTCOME_EVENTS: ReadonlySet<VmEvent['type']> = new Set([
  'VmProvisioned',
  'VmStarted',
  'VmStopped',
  'VmRebooted',
  'VmDeleted',
  'VmOperationFailed',
]);

/** How the VM recorded the end of a job: null for success, its error for failure. */
function outcomeOfJob(history: VmEvent[], jobId: string): HcpErrorShape | null {
  const outcome = [...history]
    .reverse()
    .find((e) => OUTCOME_EVENTS.has(e.type) && (e.data as { job_id?: string }).job_id === jobId);
  if (outcome?.type === 'VmOperationFailed') return outcome.data.error;
  if (outcome) return null;
  // Never recorded (the VM or its request is gone): the operation did not happen, whatever came after.
  return new HcpError(
    'CONFLICT',
    'the VM no longer awaits this job; its operation was not done',
    undefined,
    false,
  ).toShape();
}
