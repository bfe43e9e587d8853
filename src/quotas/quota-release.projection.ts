import { Logger } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EventContext, QUOTA_STREAM_PREFIX, QuotaEvent, VM_STREAM_PREFIX, VmEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { Projection } from '@hcp/projections';
import { QuotaService } from './quota.service';

export const QUOTA_RELEASE = 'quota-release';
const ACTOR = 'hcp-quota-release';

interface Release {
  projectId: string;
  vmId: string;
  context: EventContext;
}

/**
 * The process manager that gives quota back: when a VM is deleted, or its creation fails for good, its
 * reservation is released on the project's quota stream. So usage follows the events alone, and a
 * rebuild of the quota read model gives the same numbers.
 *
 * VmDeleted carries only its job id, so the VM's project is kept in `quota_vm_projects`, written from
 * VmCreateRequested in this projection's own transaction (with its checkpoint). The table also records
 * which VMs have ended; a reservation that shows up for an ended VM (a create request retried with its
 * Idempotency-Key after the VM was already gone) is released again, so it can never leak.
 *
 * Releases are appended to the event store outside the transaction; a batch applied again after a
 * crash asks for them again, and releasing what is not held decides nothing, so that is harmless.
 */
export class QuotaReleaseProjection implements Projection {
  readonly name = QUOTA_RELEASE;
  readonly streamPrefixes = [VM_STREAM_PREFIX, QUOTA_STREAM_PREFIX];
  readonly eventTypes: ReadonlySet<string> = new Set([
    'VmCreateRequested',
    'VmDeleted',
    'VmOperationFailed',
    'QuotaReserved',
  ] satisfies Array<VmEvent['type'] | QuotaEvent['type']>);
  private readonly logger = new Logger(`projection:${QUOTA_RELEASE}`);

  constructor(private readonly quotas: QuotaService) {}

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const created: Array<{ vmId: string; projectId: string }> = [];
    const ended = new Map<string, { at: string; context: EventContext }>();
    const reserved = new Map<string, EventContext>();
    for (const e of events) {
      if (e.streamId.startsWith(VM_STREAM_PREFIX)) {
        const event = e.event as VmEvent;
        const vmId = e.streamId.slice(VM_STREAM_PREFIX.length);
        if (event.type === 'VmCreateRequested') created.push({ vmId, projectId: event.data.project_id });
        else if (
          event.type === 'VmDeleted' ||
          (event.type === 'VmOperationFailed' && event.data.operation === 'create')
        ) {
          if (!ended.has(vmId)) ended.set(vmId, { at: e.at, context: contextOf(e) });
        }
      } else if (e.streamId.startsWith(QUOTA_STREAM_PREFIX)) {
        const event = e.event as QuotaEvent;
        if (event.type === 'QuotaReserved') reserved.set(event.data.vm_id, contextOf(e));
      }
    }

    // A VM's creation always precedes its end in the stream, so recording every creation of the batch
    // first and every end next gives the same table as applying them one by one.
    if (created.length) {
      await tx.query(
        `INSERT INTO quota_vm_projects (vm_id, project_id)
         SELECT * FROM unnest($1::text[], $2::text[])
         ON CONFLICT (vm_id) DO NOTHING`,
        [created.map((c) => c.vmId), created.map((c) => c.projectId)],
      );
    }
    const releases = new Map<string, Release>();
    if (ended.size) {
      const ids = [...ended.keys()];
      const rows: Array<{ vm_id: string; project_id: string }> = await tx.query(
        // Wrapped in a SELECT: TypeORM answers a bare UPDATE ... RETURNING as [rows, count].
        `WITH ended AS (
           UPDATE quota_vm_projects AS q SET ended_at = coalesce(q.ended_at, e.at)
           FROM unnest($1::text[], $2::timestamptz[]) AS e(vm_id, at)
           WHERE q.vm_id = e.vm_id
           RETURNING q.vm_id, q.project_id
         )
         SELECT vm_id, project_id FROM ended`,
        [ids, ids.map((id) => ended.get(id)!.at)],
      );
      const known = new Set(rows.map((r) => r.vm_id));
      for (const id of ids.filter((vmId) => !known.has(vmId)))
        this.logger.warn(`VM ${id} ended without a recorded creation; no quota to release`);
      for (const r of rows)
        releases.set(r.vm_id, { projectId: r.project_id, vmId: r.vm_id, context: ended.get(r.vm_id)!.context });
    }
    if (reserved.size) {
      // Only VMs that have ended are released here; a live VM keeps what it holds.
      const rows: Array<{ vm_id: string; project_id: string }> = await tx.query(
        `SELECT vm_id, project_id FROM quota_vm_projects WHERE vm_id = ANY($1::text[]) AND ended_at IS NOT NULL`,
        [[...reserved.keys()]],
      );
      for (const r of rows)
        if (!releases.has(r.vm_id))
          releases.set(r.vm_id, { projectId: r.project_id, vmId: r.vm_id, context: reserved.get(r.vm_id)! });
    }

    for (const { projectId, vmId, context } of releases.values()) {
      await this.quotas.release(projectId, vmId, context);
    }
  }
}

function contextOf(e: DecodedEvent): EventContext {
  return { actor: ACTOR, trace_id: e.context.trace_id ?? 'unknown', occurred_at: new Date().toISOString() };
}
