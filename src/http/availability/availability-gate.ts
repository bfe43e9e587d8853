import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HcpMetrics } from '../../platform/observability/hcp-metrics';
import type { ServingState } from '../../platform/lifecycle/serving-state';
import type { SchemaGate } from './schema-gate';
import { draining, UnavailableError } from '../../platform/availability/unavailable-error';
import type { EdgeStep } from '../edge/edge-step';
import { pathOf } from '../edge/http-types';

declare module 'fastify' {
  interface FastifyReply {
    /** Why this answer is a 503 of an outage or a drain (set where the error is rendered, counted here). */
    unavailable?: UnavailableError['reason'];
  }
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Operators' routes: they keep answering while HCP drains or waits for its schema. */
const OPERATIONAL = /^\/(health|metrics)(\/|$)/;

/**
 * Answers 503 with Retry-After, before any work, what this process cannot serve now: every request
 * while it drains (with Connection: close, so clients move to another instance), writes while the
 * schema does not match the code. `counted` (an onResponse hook) counts every 503 of this kind, whoever
 * raised it.
 */
export function availabilityGate(state: ServingState, schema: SchemaGate, metrics: HcpMetrics) {
  const gate: EdgeStep = (req: FastifyRequest, reply: FastifyReply) => {
    state.track(reply.raw);
    if (OPERATIONAL.test(pathOf(req))) return undefined;
    if (state.draining) {
      reply.header('Connection', 'close');
      return draining();
    }
    return (WRITES.has(req.method) && schema.writeRefusal()) || undefined;
  };
  const counted = (_req: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    if (reply.unavailable) metrics.unavailableAnswers.inc({ reason: reply.unavailable });
    done();
  };
  return { gate, counted };
}
