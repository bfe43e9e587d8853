import { Inject, Injectable, Logger } from '@nestjs/common';
import { EventContext, HcpErrorShape, JobState, notFound, toHcpError } from '@hcp/domain';
import type { CallContext } from '@hcp/providers';
import { DriverRegistry } from '../ops';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import { JobAttempt, JobExecutor, JobWork } from '../jobs';
import { VmRepository } from '../vms';
import { VmReconciler } from './vm-reconciler';

/**
 * Runs `vm.reconcile` jobs (ops asking to compare one VM with its provider now): describes the VM, writes
 * HCP's tags where the provider's differ, and records what `reconcileVm` decides. It never takes the
 * VM's pending job slot: a VM a job owns is described and left to that job, and a job or request
 * recorded meanwhile wins over the observation (the append expects the VM as it was read before the
 * provider was asked).
 */
@Injectable()
export class VmReconcileExecutor implements JobExecutor {
  private readonly logger = new Logger('reconcile');
  private readonly reconciler: VmReconciler;

  constructor(
    private readonly vms: VmRepository,
    @Inject(DriverRegistry) private readonly drivers: Pick<DriverRegistry, 'driverFor'>,
    private readonly metrics: HcpMetrics,
  ) {
    this.reconciler = new VmReconciler(vms, metrics);
  }

  async perform(job: JobState, attempt: JobAttempt): Promise<JobWork> {
    const loaded = await this.vms.load(job.resource_id);
    const vm = loaded.state;
    if (!vm || vm.status === 'deleted') return { kind: 'settled', error: notFound('VM').toShape() };
    let providerType = 'unknown';
    const timer = this.metrics.providerCalls.startTimer();
    try {
      const driver = await this.drivers.driverFor(vm.placement.provider_id, vm.placement.cluster_id);
      providerType = driver.type;
      const call: CallContext = { deadline: attempt.deadline, signal: attempt.signal, trace_id: attempt.trace_id };
      const description = await driver.describeVm(vm.id, call);
      await this.reconciler.pushTags(vm, description, driver, call);
      timer({ provider: providerType, operation: 'reconcile', outcome: 'ok' });
      return {
        kind: 'done',
        target: providerType,
        // What it saw is recorded as the reconciler's own decision: the job ends after it, on its own.
        record: async () => {
          await this.reconciler.record(loaded, description, job.trace_id);
          return false;
        },
      };
    } catch (err) {
      timer({ provider: providerType, operation: 'reconcile', outcome: toHcpError(err).code });
      return { kind: 'failed', target: providerType, error: err };
    }
  }

  /** A look that failed changes nothing about the VM: the job's own failure is the whole record. */
  async recordFailure(job: JobState, error: HcpErrorShape): Promise<void> {
    this.logger.warn(`reconcile of VM ${job.resource_id} failed: ${error.code} ${error.message}`);
  }

  /** A reconcile can always be tried again: it only looks and records what it sees. */
  async reopen(_job: JobState, _context: EventContext): Promise<void> {}
}
