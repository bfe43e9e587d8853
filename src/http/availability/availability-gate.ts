import type { NextFunction, Request, Response } from 'express';
import type { HcpMetrics } from '../../platform/observability/hcp-metrics';
import type { ServingState } from '../../platform/lifecycle/serving-state';
import type { SchemaGate } from './schema-gate';
import { draining, UnavailableError } from '../../platform/availability/unavailable-error';

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Operators' routes: they keep answering while HCP drains or waits for its schema. */
const OPERATIONAL = /^\/(health|metrics)(\/|$)/;

/**
 * Answers 503 with Retry-After, before any work, what this process cannot serve now: every request
 * while it drains (with Connection: close, so clients move to another instance), writes while the
 * schema does not match the code. Also counts every 503 of this kind, whoever raised it.
 */
export function availabilityGate(state: ServingState, schema: SchemaGate, metrics: HcpMetrics) {
  return (req: Request, res: Response, next: NextFunction): void => {
    state.track(res);
    res.once('finish', () => {
      const reason = res.locals.unavailable as UnavailableError['reason'] | undefined;
      if (reason) metrics.unavailableAnswers.inc({ reason });
    });
    if (OPERATIONAL.test(req.path)) next();
    else if (state.draining) {
      res.setHeader('Connection', 'close');
      next(draining());
    } else next((WRITES.has(req.method) && schema.writeRefusal()) || undefined);
  };
}
