import { Inject, Injectable } from '@nestjs/common';
import { adoptVm, conflict, decideOrphan, EventContext, ObservedVm, OrphanState } from '@hcp/domain';
import { DriverRegistry } from '../../ops';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { VmRepository } from '../../vms';
import { OrphanRepository } from '../orphan.repository';

/** How long ops wait for the provider to describe the resource they adopt. */
const DESCRIBE_TIMEOUT_MS = 30_000;

/**
 * Ops give the resource of a failed create back to its VM: the provider describes it now, the VM takes
 * that power state and those addresses and leaves `error` (the VM's own decider, `adoptVm`), then the
 * orphan records its adoption. Refused with CONFLICT for an orphan with no VM record or a deleted one
 * (nothing can take it: destroy it instead) and for one the provider no longer has.
 */
@Injectable()
export class OrphanAdopter {
  constructor(
    private readonly orphans: OrphanRepository,
    private readonly vms: VmRepository,
    @Inject(DriverRegistry) private readonly drivers: Pick<DriverRegistry, 'driverFor'>,
    private readonly metrics: HcpMetrics,
  ) {}

  async adopt(orphanId: string, context: EventContext): Promise<OrphanState> {
    const { state: orphan } = await this.orphans.load(orphanId);
    // The orphan's own refusals come before any provider call.
    decideOrphan(orphan, { type: 'adopt', power_state: 'stopped' });
    const current = orphan as OrphanState;
    const observed = await this.describe(current);
    await this.vms.update(current.hcp_id, (vm) => adoptVm(vm, observed), context);
    const { state } = await this.orphans.update(
      orphanId,
      (s) => decideOrphan(s, { type: 'adopt', power_state: observed.power_state }),
      context,
    );
    this.metrics.orphanActions.inc({ action: 'adopted', provider: current.provider_id });
    return state as OrphanState;
  }

  private async describe(orphan: OrphanState): Promise<ObservedVm> {
    const driver = await this.drivers.driverFor(orphan.provider_id, orphan.cluster_id);
    const description = await driver.describeVm(orphan.hcp_id, {
      deadline: new Date(Date.now() + DESCRIBE_TIMEOUT_MS),
      signal: AbortSignal.timeout(DESCRIBE_TIMEOUT_MS),
    });
    if (!description) throw conflict('the provider no longer has this resource; nothing to adopt');
    // Paused is powered on; a state the provider cannot tell is taken as off, and the reconcile loop
    // corrects it once the provider can.
    const power_state =
      description.power_state === 'running' || description.power_state === 'paused' ? 'running' : 'stopped';
    return { power_state, addresses: description.addresses };
  }
}
