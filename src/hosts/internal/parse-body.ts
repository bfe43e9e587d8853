import type { z } from 'zod';
import { invalidRequest } from '@hcp/domain';

/**
 * An agent's body read through the host protocol's schema: anything else is INVALID_REQUEST naming the
 * first field at fault (its path and the rule), never echoing the value (it may hold a token).
 */
export function parseBody<S extends z.ZodTypeAny>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.join('.') || '(body)';
  throw invalidRequest(`${field}: ${issue.message}`, { field });
}
