import { z } from 'zod/v4';
import { EventSchema, idSchema, schemaFor } from '../events/event-schemas';
import { QuotaEventType, QuotaLimitsSet, QuotaReleased, QuotaReserved } from './quota.events';

const amount = z.number().int().nonnegative();
const resources = z.object({ vcpus: amount, ram_mb: amount, disk_gb: amount });

/** The runtime schema of every quota event at its current version (see QUOTA_EVENT_VERSIONS). */
export const QUOTA_EVENT_SCHEMAS = {
  QuotaLimitsSet: schemaFor<QuotaLimitsSet>()(
    z.object({ project_id: idSchema, limits: resources.extend({ instances: amount }) }),
  ),
  QuotaReserved: schemaFor<QuotaReserved>()(z.object({ project_id: idSchema, vm_id: idSchema, resources })),
  QuotaReleased: schemaFor<QuotaReleased>()(z.object({ project_id: idSchema, vm_id: idSchema })),
} satisfies Record<QuotaEventType, EventSchema>;
