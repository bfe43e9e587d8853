import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

export const REQUEST_ID_HEADER = 'x-request-id';
const VALID_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

export interface TracedRequest extends Request {
  traceId: string;
}

/**
 * Gives every request its trace id: the caller's `X-Request-Id` when it is well-formed, else the trace
 * id of a W3C `traceparent`, else a new one. It is echoed on every response and used as `trace_id` in
 * errors, events, jobs and logs.
 */
export function requestIdMiddleware(req: Request, res: Response, next: NextFunction): void {
  const given = req.header(REQUEST_ID_HEADER);
  const traceparent = req.header('traceparent')?.match(TRACEPARENT)?.[1];
  const traceId = given && VALID_REQUEST_ID.test(given) ? given : (traceparent ?? randomUUID());
  (req as TracedRequest).traceId = traceId;
  res.setHeader('X-Request-Id', traceId);
  next();
}

export function traceIdOf(req: Request): string {
  return (req as Partial<TracedRequest>).traceId ?? 'unknown';
}
