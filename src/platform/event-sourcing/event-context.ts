import { EventContext } from '@hcp/domain';

export function eventContext(actor: string, traceId: string, now: Date = new Date()): EventContext {
  return { actor, trace_id: traceId, occurred_at: now.toISOString() };
}
