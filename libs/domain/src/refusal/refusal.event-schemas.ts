import { z } from 'zod/v4';
import { EventSchema, schemaFor } from '../events/event-schemas';
import { RefusalEvent, RequestRefusalsSuppressed } from './refusal.events';

const count = z.number().int().nonnegative();

/** The runtime schema of the refusal summary at its current version. */
export const REFUSAL_EVENT_SCHEMAS = {
  RequestRefusalsSuppressed: schemaFor<RequestRefusalsSuppressed>()(
    z.object({
      client_address: z.string().nullable(),
      actor: z.string().nullable(),
      window_start: z.string(),
      window_end: z.string(),
      suppressed: count,
      rate_limited: count,
      codes: z.record(z.string(), count),
    }),
  ),
} satisfies Record<RefusalEvent['type'], EventSchema>;
