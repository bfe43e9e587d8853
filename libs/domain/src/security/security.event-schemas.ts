import { z } from 'zod/v4';
import { EventSchema, schemaFor } from '../events/event-schemas';
import { RequestAnswered, RequestEvent, RequestReceived, RequestRefused } from './request.events';
import { BreakGlassUsed, SecurityEvent } from './security.events';

const target = z.record(z.string(), z.string());
const rejected = z.object({ project_id: z.object({ length: z.number(), prefix: z.string() }).optional() });
const scope = z.enum(['tenant', 'ops']);

/** The runtime schema of break-glass and request events at their current versions (v1 after upcasting). */
export const SECURITY_EVENT_SCHEMAS = {
  BreakGlassUsed: schemaFor<BreakGlassUsed>()(
    z.object({
      actor: z.string(),
      reason: z.string(),
      method: z.string(),
      path: z.string(),
      project_id: z.string().nullable(),
      ops_roles: z.array(z.string()),
    }),
  ),
} satisfies Record<SecurityEvent['type'], EventSchema>;

export const REQUEST_EVENT_SCHEMAS = {
  RequestReceived: schemaFor<RequestReceived>()(
    z.object({
      actor: z.string(),
      action: z.string(),
      method: z.string(),
      route: z.string(),
      scope,
      project_id: z.string().nullable(),
      target,
      rejected,
    }),
  ),
  RequestRefused: schemaFor<RequestRefused>()(
    z.object({
      actor: z.string().nullable(),
      action: z.string(),
      method: z.string(),
      route: z.string().nullable(),
      target,
      project_id: z.string().nullable(),
      rejected,
      code: z.string(),
      status: z.number().int(),
    }),
  ),
  RequestAnswered: schemaFor<RequestAnswered>()(
    z.object({
      actor: z.string(),
      action: z.string(),
      method: z.string(),
      route: z.string(),
      scope,
      project_id: z.string().nullable(),
      target,
      status: z.number().int(),
      error_code: z.string().nullable(),
      job_id: z.string().nullable(),
    }),
  ),
} satisfies Record<RequestEvent['type'], EventSchema>;
