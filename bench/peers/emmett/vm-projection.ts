import { identifier, SQL } from '@event-driven-io/dumbo';
import { postgreSQLRawSQLProjection } from '@event-driven-io/emmett-postgresql';
import type { QuotaEvent } from './quota';
import { VM_TABLE } from './vm-table';

/**
 * Inline projection: runs inside the append's transaction, so a 202 means the row is there. The
 * document has the shape of HCP's VmState for a VM whose create job is queued.
 */
export const vmProjection = postgreSQLRawSQLProjection<QuotaEvent>({
  name: 'emmett-vms',
  canHandle: ['VmCreationRequested'],
  evolve: (event) => {
    // Emmett hands the projection every event of an append that holds one it can handle.
    if (event.type !== 'VmCreationRequested') return [];
    const d = event.data;
    const document = {
      id: d.vm_id,
      project_id: d.project_id,
      name: d.name,
      zone: d.zone,
      image_id: d.image_id,
      flavor_id: d.flavor_id,
      resources: d.resources,
      placement: null,
      status: 'creating',
      desired_state: 'running',
      addresses: [],
      tags: d.tags,
      metadata: {},
      pending_job_id: d.job_id,
      last_job_id: d.job_id,
      last_error: null,
      created_at: d.requested_at,
      updated_at: d.requested_at,
    };
    return SQL`INSERT INTO ${identifier(VM_TABLE)} (id, project_id, document, created_at)
      VALUES (${d.vm_id}, ${d.project_id}, ${JSON.stringify(document)}::jsonb, ${d.requested_at})`;
  },
});
