import { z } from 'zod/v4';
import { EventSchema, idSchema, schemaFor } from '../events/event-schemas';
import { CONSOLE_TYPES } from '../ops/capabilities';
import {
  CONSOLE_CLOSE_REASONS,
  CONSOLE_REFUSAL_REASONS,
  ConsoleSessionClosed,
  ConsoleSessionConnected,
  ConsoleSessionEventType,
  ConsoleSessionOpened,
  ConsoleSessionRefused,
} from './console-session.events';

const ref = z.object({ session_id: idSchema, project_id: idSchema, vm_id: idSchema });
const bytes = z.number().nonnegative();

/** The runtime schema of every console session event at its current version (v1 refusals after upcasting). */
export const CONSOLE_EVENT_SCHEMAS = {
  ConsoleSessionOpened: schemaFor<ConsoleSessionOpened>()(
    ref.extend({
      type: z.enum(CONSOLE_TYPES),
      token_sha256: z.string(),
      connect_by: z.string(),
      max_duration_ms: z.number(),
      opened_by: z.string(),
    }),
  ),
  ConsoleSessionConnected: schemaFor<ConsoleSessionConnected>()(ref.extend({ ends_by: z.string() })),
  ConsoleSessionClosed: schemaFor<ConsoleSessionClosed>()(
    ref.extend({ reason: z.enum(CONSOLE_CLOSE_REASONS), bytes_to_client: bytes, bytes_to_provider: bytes }),
  ),
  ConsoleSessionRefused: schemaFor<ConsoleSessionRefused>()(
    ref.extend({ reason: z.enum(CONSOLE_REFUSAL_REASONS), client_address: z.string().nullable() }),
  ),
} satisfies Record<ConsoleSessionEventType, EventSchema>;
