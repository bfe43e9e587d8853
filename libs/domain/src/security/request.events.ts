import { DomainEvent } from '../events/domain-event';
import { boundedTarget, boundedValue, RejectedValue, recordedProjectId, routeFacts } from './request-facts';

// The sanitising rules, for whoever records or reads request facts (exported with the events).
export * from './request-facts';

/** Values of the request that were not recorded as given (see request-facts.ts). */
export interface RejectedRequestValues {
  project_id?: RejectedValue;
}

/**
 * What reached the API: every state-changing request and every ops-scope request is recorded before
 * its command runs, and every refused request (authentication, authorization, rate limit) when it is
 * refused. These facts, not controllers, feed the audit trail.
 *
 * Version 2 records the route template and the identifiers it matched (bounded) instead of the raw URL
 * of version 1, and a project id only when it is a valid one (else null, and `rejected` says what it
 * was): a raw URL carries query strings (tokens) and values of any length.
 */
export type RequestReceived = DomainEvent<
  'RequestReceived',
  {
    actor: string;
    action: string;
    method: string;
    route: string;
    scope: 'tenant' | 'ops';
    project_id: string | null;
    target: Record<string, string>;
    rejected: RejectedRequestValues;
  }
>;
export type RequestRefused = DomainEvent<
  'RequestRefused',
  {
    actor: string | null;
    action: string;
    method: string;
    /** Null when the request matched no route. */
    route: string | null;
    target: Record<string, string>;
    project_id: string | null;
    rejected: RejectedRequestValues;
    code: string;
    status: number;
  }
>;
/**
 * How a recorded request was answered, on the stream of its RequestReceived: `accepted` by a 2xx (with
 * the job it opened, if any), else failed with the error code the client got (null only for an error
 * from outside the taxonomy with a 4xx status: its status says what happened).
 */
export type RequestAnswered = DomainEvent<
  'RequestAnswered',
  {
    actor: string;
    action: string;
    method: string;
    route: string;
    scope: 'tenant' | 'ops';
    project_id: string | null;
    target: Record<string, string>;
    status: number;
    error_code: string | null;
    job_id: string | null;
  }
>;

export type RequestEvent = RequestReceived | RequestRefused | RequestAnswered;

export const REQUEST_EVENT_VERSIONS: Record<RequestEvent['type'], number> = {
  RequestReceived: 2,
  RequestRefused: 2,
  RequestAnswered: 1,
};
export const REQUEST_STREAM_PREFIX = 'request-';

/** What a refusal is reported with (the facts as the exception filter has them); recorded as RequestRefused. */
export interface RefusalFacts {
  actor: string | null;
  action: string;
  method: string;
  /** The URL as requested: only its route and matched identifiers are recorded. */
  path: string;
  project_id: string | null;
  code: string;
  status: number;
}

/** A refusal as recorded: route, bounded identifiers and a valid project id or null, never the raw URL. */
export function refusedData(facts: RefusalFacts): RequestRefused['data'] {
  const { action, route, target } = routeFacts(facts.method, facts.action, facts.path);
  const project = recordedProjectId(facts.project_id ?? target.project_id);
  if (target.project_id !== undefined) {
    if (project.project_id === null) delete target.project_id;
    else target.project_id = project.project_id;
  }
  return {
    actor: facts.actor === null ? null : boundedActor(facts.actor),
    action,
    method: boundedValue(facts.method, 16),
    route,
    target,
    project_id: project.project_id,
    rejected: project.rejected ? { project_id: project.rejected } : {},
    code: facts.code,
    status: facts.status,
  };
}

/** What the audit interceptor knows of a request it records: its route and the parameters the router matched. */
export interface ReceivedFacts {
  actor: string;
  method: string;
  /** The route template (`/v1/projects/:project_id/vms`). */
  route: string;
  scope: 'tenant' | 'ops';
  params: Record<string, unknown>;
}

/** A received request as recorded: bounded identifiers, a valid project id or null. */
export function receivedData(facts: ReceivedFacts): RequestReceived['data'] {
  const method = boundedValue(facts.method, 16);
  const route = boundedValue(facts.route, 256);
  const target = boundedTarget(facts.params);
  const project = recordedProjectId(facts.params.project_id);
  if (project.rejected) delete target.project_id;
  return {
    actor: boundedActor(facts.actor),
    action: `${method} ${route}`,
    method,
    route,
    scope: facts.scope,
    project_id: project.project_id,
    target,
    rejected: project.rejected ? { project_id: project.rejected } : {},
  };
}

/** Actors come from verified tokens, but a subject claim can still be long. */
function boundedActor(actor: string): string {
  return actor.length <= 255 ? actor : `${actor.slice(0, 254)}…`;
}

/** RequestReceived v1 (raw URL in `path`) to v2: the route from the action, identifiers and project id checked. */
export function upcastRequestReceivedV1(data: Record<string, unknown>): Record<string, unknown> {
  const method = String(data.method);
  const action = String(data.action);
  const project = recordedProjectId(data.project_id);
  const target = boundedTarget(data.target as Record<string, unknown>);
  if (project.rejected) delete target.project_id;
  return {
    actor: data.actor,
    action,
    method,
    route: boundedValue(action.startsWith(`${method} `) ? action.slice(method.length + 1) : action, 256),
    scope: data.scope,
    project_id: project.project_id,
    target,
    rejected: project.rejected ? { project_id: project.rejected } : {},
  };
}

/** RequestRefused v1 (raw URL in `path`) to v2: as a refusal is recorded today. */
export function upcastRequestRefusedV1(data: Record<string, unknown>): Record<string, unknown> {
  return refusedData(data as unknown as RefusalFacts);
}
