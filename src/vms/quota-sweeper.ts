import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { HcpError } from '@hcp/domain';
import { eventContext } from '../platform/event-sourcing/event-context';
import { VmRepository } from './vm.repository';
import { QuotaService } from '../quotas';

/**
 * Gives back reservations whose VM was never recorded (the process died between reserving quota and
 * appending the VM's first event). A create takes milliseconds between the two, so a reservation is
 * released only when its VM is still missing one whole sweep interval after it was first seen missing.
 */
@Injectable()
export class QuotaSweeper {
  private readonly logger = new Logger('quota-sweeper');
  private suspects = new Set<string>();

  constructor(
    private readonly db: DataSource,
    private readonly vms: VmRepository,
    private readonly quotas: QuotaService,
  ) {}

  /** One pass; returns how many reservations it released. */
  async sweep(): Promise<number> {
    const rows: Array<{ project_id: string; vm_id: string }> = await this.db.query(
      `SELECT project_id, vm_id FROM project_quota_reservations`,
    );
    const missing = new Set<string>();
    let released = 0;
    for (const { project_id, vm_id } of rows) {
      if (await this.recorded(vm_id)) continue;
      const key = `${project_id}/${vm_id}`;
      missing.add(key);
      if (!this.suspects.has(key)) continue;
      if (await this.quotas.release(project_id, vm_id, eventContext('hcp-quota-sweeper', 'quota-sweep'))) {
        released += 1;
        this.logger.warn({ msg: 'released the quota of a VM that was never recorded', project_id, vm_id });
      }
    }
    this.suspects = missing;
    return released;
  }

  private async recorded(vmId: string): Promise<boolean> {
    try {
      await this.vms.creationRequest(vmId);
      return true;
    } catch (err) {
      if (err instanceof HcpError && err.code === 'NOT_FOUND') return false;
      throw err;
    }
  }
}
