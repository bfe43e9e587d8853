import { HcpError } from '@hcp/domain';
import type { z } from 'zod';

/** An internal route's body read through its wire schema (an agent's request is outside input). */
export function parseBody<S extends z.ZodTypeAny>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body ?? {});
  if (parsed.success) return parsed.data;
  throw new HcpError('INVALID_REQUEST', 'the request body does not have the expected shape', {
    issues: parsed.error.issues.slice(0, 10).map((i) => ({ path: i.path.join('.'), message: i.message })),
  });
}
