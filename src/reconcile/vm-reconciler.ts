import { HcpError, reconcileVm, VmEvent, VmState } from '@hcp/domain';
import type { CallContext, ProviderDriver, VmDescription } from '@hcp/providers';
import { Loaded } from '../platform/event-sourcing/aggregate-repository';
import { eventContext } from '../platform/event-sourcing/event-context';
import { HcpMetrics } from '../platform/observability/hcp-metrics';
import type { VmRepository } from '../vms';
import { driftKindsOf, observedOf, tagsDiffer } from './drift';

/** The actor of the drift events reconcile records (the audit trail's `vm.drift_observed`, `vm.vanished`). */
export const RECONCILER_ACTOR = 'hcp-reconciler';

/**
 * Brings one VM's record in line with a description the provider gave, and the provider's tags in line
 * with HCP's. Shared by the periodic pass over a cluster and the on-demand `vm.reconcile` job.
 */
export class VmReconciler {
  constructor(
    private readonly vms: Pick<VmRepository, 'append'>,
    private readonly metrics: Pick<HcpMetrics, 'reconcileDrift'>,
  ) {}

  /**
   * Records what `reconcileVm` decides on `loaded`, the VM as it was read BEFORE the provider was asked:
   * the append expects that revision, so anything recorded since (a job's outcome, a new request) wins
   * and this decision is dropped; the next pass looks again. Returns the VM as it is now known.
   */
  async record(
    loaded: Loaded<VmState>,
    description: VmDescription | null | undefined,
    traceId: string,
  ): Promise<{ state: VmState | null; events: VmEvent[] }> {
    const observed = observedOf(description);
    if (!loaded.state || observed === undefined) return { state: loaded.state, events: [] };
    const events = reconcileVm(loaded.state, observed);
    if (events.length === 0) return { state: loaded.state, events };
    try {
      const after = await this.vms.append(loaded, events, eventContext(RECONCILER_ACTOR, traceId));
      for (const kind of driftKindsOf(loaded.state, events)) this.metrics.reconcileDrift.inc({ kind });
      return { state: after.state, events };
    } catch (err) {
      if (err instanceof HcpError && err.code === 'CONFLICT') return { state: loaded.state, events: [] };
      throw err;
    }
  }

  /** Writes HCP's tags to the provider when what it reports differs; true when it wrote them. */
  async pushTags(
    state: VmState | null,
    description: VmDescription | null | undefined,
    driver: ProviderDriver,
    ctx: CallContext,
  ): Promise<boolean> {
    if (!state || !driver.updateTags || !driver.capabilities().provider_tags) return false;
    if (!tagsDiffer(state, description)) return false;
    await driver.updateTags(state.id, state.tags, ctx);
    this.metrics.reconcileDrift.inc({ kind: 'tags' });
    return true;
  }
}
