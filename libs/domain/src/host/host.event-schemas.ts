import { z } from 'zod/v4';
import { EventSchema, idSchema, schemaFor } from '../events/event-schemas';
import { HostCredentialRotated, HostEnrolled, HostEnrollmentCreated, HostEventType, HostRevoked } from './host.events';

const hostRef = z.object({ host_id: idSchema, cluster_id: idSchema });

/** The runtime schema of every host event at its current version (see HOST_EVENT_VERSIONS). */
export const HOST_EVENT_SCHEMAS = {
  HostEnrollmentCreated: schemaFor<HostEnrollmentCreated>()(
    z.object({ enrollment_id: idSchema, cluster_id: idSchema, expires_at: z.string().min(1), created_by: z.string() }),
  ),
  HostEnrolled: schemaFor<HostEnrolled>()(
    hostRef.extend({
      enrollment_id: idSchema,
      identity: z.string().min(1).max(255),
      hostname: z.string().min(1).max(255),
      re_enrolled: z.boolean(),
      client_address: z.string().max(64).nullable(),
    }),
  ),
  HostRevoked: schemaFor<HostRevoked>()(hostRef),
  HostCredentialRotated: schemaFor<HostCredentialRotated>()(hostRef),
} satisfies Record<HostEventType, EventSchema>;
