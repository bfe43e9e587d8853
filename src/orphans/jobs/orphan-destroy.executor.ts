import { Inject, Injectable } from '@nestjs/common';
import {
  decideOrphan,
  EventContext,
  HcpError,
  HcpErrorShape,
  JobState,
  OrphanState,
  orphanRecordOf,
  toHcpError,
} from '@hcp/domain';
import { CallContext } from '@hcp/providers';
import { JOB_WORKER_ACTOR, JobAttempt, JobClosing, JobExecutor, JobWork } from '../../jobs';
import { DriverRegistry } from '../../ops';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { VmRepository } from '../../vms';
import { OrphanRepository } from '../orphan.repository';

/**
 * Runs `orphan.destroy` jobs: deletes the provider resource by its HCP id on the orphan's cluster. Right
 * before deleting it looks at HCP's VM of that id again, and refuses (CONFLICT, not retried) when the VM
 * is live by now: a resource a VM owns is never destroyed as an orphan. The delete is idempotent (a
 * resource already gone is a success), so a retried attempt is harmless.
 */
@Injectable()
export class OrphanDestroyExecutor implements JobExecutor {
  constructor(
    private readonly orphans: OrphanRepository,
    private readonly vms: VmRepository,
    @Inject(DriverRegistry) private readonly drivers: Pick<DriverRegistry, 'driverFor'>,
    private readonly metrics: HcpMetrics,
  ) {}

  async perform(job: JobState, attempt: JobAttempt): Promise<JobWork> {
    const orphan = (await this.orphans.load(job.resource_id)).state;
    if (orphan?.status !== 'destroying' || orphan.job_id !== job.id) return settled(orphan, job);
    let providerType = 'unknown';
    const timer = this.metrics.providerCalls.startTimer();
    try {
      const vm = (await this.vms.load(orphan.hcp_id)).state;
      if (orphanRecordOf(vm) === null)
        throw new HcpError(
          'CONFLICT',
          'HCP has a live VM with this id now; the resource is no orphan and was left as it is',
          { vm_status: vm?.status },
          false,
        );
      const driver = await this.drivers.driverFor(orphan.provider_id, orphan.cluster_id);
      providerType = driver.type;
      const call: CallContext = {
        deadline: attempt.deadline,
        signal: attempt.signal,
        trace_id: attempt.trace_id,
        recorded: attempt.recorded,
        record: (key, value) => attempt.record(key, value),
      };
      await driver.deleteVm(orphan.hcp_id, call);
      timer({ provider: providerType, operation: 'orphan_destroy', outcome: 'ok' });
      return { kind: 'done', target: providerType, record: (closing) => this.record(job, orphan, null, closing) };
    } catch (err) {
      timer({ provider: providerType, operation: 'orphan_destroy', outcome: toHcpError(err).code });
      return { kind: 'failed', target: providerType, error: err };
    }
  }

  async recordFailure(job: JobState, error: HcpErrorShape): Promise<void> {
    const orphan = (await this.orphans.load(job.resource_id)).state;
    await this.record(job, orphan, error);
  }

  /** Ops retry a failed destroy: the orphan is destroyed again under the same job, if it still waits for ops. */
  async reopen(job: JobState, context: EventContext): Promise<void> {
    await this.orphans.update(
      job.resource_id,
      (orphan) => decideOrphan(orphan, { type: 'destroy', job_id: job.id, requested_by: 'ops' }),
      context,
    );
  }

  /** Records the destroy's end on the orphan, with `closing` (the job's end) in its commit; true when that committed too. */
  private async record(
    job: JobState,
    orphan: OrphanState | null,
    error: HcpErrorShape | null,
    closing?: JobClosing,
  ): Promise<boolean> {
    const context = eventContext(JOB_WORKER_ACTOR, job.trace_id);
    const { events, alongside } = await this.orphans.update(
      job.resource_id,
      (state) =>
        decideOrphan(
          state,
          error
            ? { type: 'record_destroy_failed', job_id: job.id, error }
            : { type: 'record_destroyed', job_id: job.id },
        ),
      context,
      undefined,
      closing && (() => closing(context.occurred_at)),
    );
    if (events.length > 0 && orphan)
      this.metrics.orphanActions.inc({ action: error ? 'destroy_failed' : 'destroyed', provider: orphan.provider_id });
    return alongside;
  }
}

/** The orphan settled this job already (recorded before a crash) or no longer waits for it. */
function settled(orphan: OrphanState | null, job: JobState): JobWork {
  if (orphan?.job_id === job.id && orphan.status === 'destroyed') return { kind: 'settled', error: null };
  if (orphan?.job_id === job.id && orphan.status === 'destroy_failed' && orphan.last_error)
    return { kind: 'settled', error: orphan.last_error };
  return {
    kind: 'settled',
    error: new HcpError(
      'CONFLICT',
      'the orphan no longer awaits this job; nothing was destroyed',
      undefined,
      false,
    ).toShape(),
  };
}
