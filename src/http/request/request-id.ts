import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';

export const REQUEST_ID_HEADER = 'x-request-id';
const VALID_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's trace id (requestId). */
    traceId?: string;
  }
}

/**
 * Gives every request its trace id: the caller's `X-Request-Id` when it is well-formed, else the trace
 * id of a W3C `traceparent`, else a new one. It is echoed on every response and used as `trace_id` in
 * errors, events, jobs and logs.
 */
export function requestId(req: FastifyRequest, reply: FastifyReply): undefined {
  const traceId = traceIdFromHeaders(req.headers);
  req.traceId = traceId;
  reply.header('X-Request-Id', traceId);
  return undefined;
}

/** The trace id of a request from its headers (also for websocket upgrades, which bypass the router). */
export function traceIdFromHeaders(headers: IncomingHttpHeaders): string {
  const given = headers[REQUEST_ID_HEADER];
  const traceparent = (typeof headers.traceparent === 'string' ? headers.traceparent : undefined)?.match(
    TRACEPARENT,
  )?.[1];
  return typeof given === 'string' && VALID_REQUEST_ID.test(given) ? given : (traceparent ?? randomUUID());
}

export function traceIdOf(req: { traceId?: string }): string {
  return req.traceId ?? 'unknown';
}
