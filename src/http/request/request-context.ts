import { randomUUID } from 'node:crypto';
import { nameBasedId } from '../../platform/event-sourcing/name-based-id';
import type { CarriedRequest } from './request-recorder';

/** Who is asking, and the request id that ties logs, events, jobs and errors together. */
export interface RequestContext {
  actor: string;
  traceId: string;
  /** The request's Idempotency-Key: ids are then derived from it, so a retry lands on the same job. */
  idempotencyKey?: string;
  /** The request's record, when its route lets the handler commit it with its own events. */
  carried?: CarriedRequest;
}

/** Ids of what a request creates: random, or derived from its idempotency key. */
export function idsFor(ctx: RequestContext, projectId: string, kind: 'vm' | 'job'): string {
  return ctx.idempotencyKey ? nameBasedId('hcp-idempotency', projectId, ctx.idempotencyKey, kind) : randomUUID();
}
