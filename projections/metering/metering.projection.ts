import { EntityManager } from 'typeorm';
import { MeteredVm, MeteringRecord, meteringRecordsOf, VM_STREAM_PREFIX, VmEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { MeteringSink } from '../audit/audit-sink';
import { BulkInsert, BulkInserts, bulkInsertBatch, runBulkInserts } from '../runner/bulk-insert';
import { OneStatementBatch } from '../runner/projection';
import { RebuildableProjection } from '../runner/projection-rebuild';

const METERED_VMS = new BulkInsert({
  name: 'metering_vms',
  columns: { vm_id: 'uuid', project_id: 'text', zone: 'text', flavor_id: 'text', resources: 'jsonb' },
  key: ['vm_id'],
  onConflict: 'nothing',
});
const METERING_RECORDS = new BulkInsert({
  name: 'metering_records',
  columns: {
    event_id: 'text',
    kind: 'text',
    project_id: 'text',
    vm_id: 'uuid',
    zone: 'text',
    flavor_id: 'text',
    resources: 'jsonb',
    effective_at: 'timestamptz',
    position: 'bigint',
  },
  key: ['event_id'],
  onConflict: 'nothing',
});

/**
 * Billing's record of every change that costs: allocation, power on/off, deletion, with the project,
 * VM, resources and zone, at the time the provider made the change. Published before the checkpoint
 * moves (at least once; consumers de-duplicate by event_id).
 */
export class MeteringProjection implements RebuildableProjection {
  readonly name = 'metering';
  readonly tables = ['metering_records', 'metering_vms'];
  readonly streamPrefixes = [VM_STREAM_PREFIX];

  constructor(private readonly sink: MeteringSink) {}

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    await runBulkInserts(tx, await this.rowsOf(events, tx));
  }

  /** The batch's rows as one statement with the checkpoint's move, after reading what it needs. */
  async oneStatement(events: DecodedEvent[], reader: EntityManager): Promise<OneStatementBatch> {
    return bulkInsertBatch(await this.rowsOf(events, reader));
  }

  /**
   * The batch's rows of `metering_vms` and `metering_records`, its records published first. The VMs of
   * earlier batches are read through `reader`: rows only this projection writes, so a read outside the
   * batch's transaction finds the same.
   */
  private async rowsOf(events: DecodedEvent[], reader: EntityManager): Promise<BulkInserts> {
    const vms = await this.earlierVms(events, reader);
    const newVms: Array<MeteredVm & { vm_id: string }> = [];
    const records: Array<{ record: MeteringRecord; position: bigint }> = [];
    for (const e of events) {
      const vmId = e.streamId.slice(VM_STREAM_PREFIX.length);
      const event = e.event as VmEvent;
      if (event.type === 'VmCreateRequested') {
        const vm = {
          project_id: event.data.project_id,
          zone: event.data.zone,
          flavor_id: event.data.flavor_id,
          resources: event.data.resources,
        };
        vms.set(vmId, vm);
        newVms.push({ vm_id: vmId, ...vm });
        continue;
      }
      const vm = vms.get(vmId);
      if (!vm) continue;
      for (const record of meteringRecordsOf(event, e.eventId, vmId, vm, e.at))
        records.push({ record, position: e.position });
    }
    // Publish before writing, like the audit projection: no transaction id is held while the broker is slow.
    if (records.length) await this.sink.publish(records.map((r) => r.record));
    return [
      [METERED_VMS, newVms],
      [METERING_RECORDS, records.map(({ record, position }) => ({ ...record, position: position.toString() }))],
    ];
  }

  /** What the batch's events need to know of VMs created in earlier batches: one query for all. */
  private async earlierVms(events: DecodedEvent[], reader: EntityManager): Promise<Map<string, MeteredVm>> {
    const createdHere = new Set(events.filter((e) => e.event.type === 'VmCreateRequested').map((e) => e.streamId));
    const wanted = [
      ...new Set(
        events.filter((e) => !createdHere.has(e.streamId)).map((e) => e.streamId.slice(VM_STREAM_PREFIX.length)),
      ),
    ];
    if (wanted.length === 0) return new Map();
    const rows: Array<MeteredVm & { vm_id: string }> = await reader.query(
      `SELECT vm_id, project_id, zone, flavor_id, resources FROM metering_vms WHERE vm_id = ANY($1::uuid[])`,
      [wanted],
    );
    return new Map(rows.map(({ vm_id, ...vm }) => [vm_id, vm]));
  }
}
