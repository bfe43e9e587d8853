import { z } from 'zod/v4';
import { errorShapeSchema } from '../errors.schema';
import { EventSchema, idSchema, schemaFor } from '../events/event-schemas';
import {
  ORPHAN_HCP_RECORDS,
  ORPHAN_POWER_STATES,
  OrphanAdopted,
  OrphanCleared,
  OrphanDestroyed,
  OrphanDestroyFailed,
  OrphanDestroyRequested,
  OrphanEventType,
  OrphanFound,
  OrphanObserved,
} from './orphan.events';

const powerState = z.enum(ORPHAN_POWER_STATES);
const hcpRecord = z.enum(ORPHAN_HCP_RECORDS);
const providerRef = z.record(z.string(), z.unknown());
const projectId = idSchema.nullable();
const time = z.string().min(1);

/** The runtime schema of every orphan event at its current version (see ORPHAN_EVENT_VERSIONS). */
export const ORPHAN_EVENT_SCHEMAS = {
  OrphanFound: schemaFor<OrphanFound>()(
    z.object({
      orphan_id: idSchema,
      provider_id: idSchema,
      cluster_id: idSchema,
      hcp_id: idSchema,
      project_id: projectId,
      provider_ref: providerRef,
      power_state: powerState,
      hcp_record: hcpRecord,
      found_at: time,
    }),
  ),
  OrphanObserved: schemaFor<OrphanObserved>()(
    z.object({
      project_id: projectId,
      provider_ref: providerRef,
      power_state: powerState,
      hcp_record: hcpRecord,
      observed_at: time,
    }),
  ),
  OrphanAdopted: schemaFor<OrphanAdopted>()(
    z.object({ vm_id: idSchema, project_id: projectId, power_state: z.enum(['running', 'stopped']) }),
  ),
  OrphanDestroyRequested: schemaFor<OrphanDestroyRequested>()(
    z.object({ job_id: idSchema, project_id: idSchema, requested_by: z.enum(['ops', 'policy']) }),
  ),
  OrphanDestroyed: schemaFor<OrphanDestroyed>()(z.object({ job_id: idSchema })),
  OrphanDestroyFailed: schemaFor<OrphanDestroyFailed>()(z.object({ job_id: idSchema, error: errorShapeSchema })),
  OrphanCleared: schemaFor<OrphanCleared>()(z.object({ reason: z.enum(['not_listed', 'vm_live']), observed_at: time })),
} satisfies Record<OrphanEventType, EventSchema>;
