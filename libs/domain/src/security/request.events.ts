import { DomainEvent } from '../events/domain-event';

/**
 * What reached the API: every state-changing request and every ops-scope request is recorded before
 * its command runs, and every refused request (authentication, authorization, rate limit) when it is
 * refused. These facts, not controllers, feed the audit trail.
 */
export type RequestReceived = DomainEvent<
  'RequestReceived',
  {
    actor: string;
    action: string;
    method: string;
    path: string;
    scope: 'tenant' | 'ops';
    project_id: string | null;
    target: Record<string, string>;
  }
>;
export type RequestRefused = DomainEvent<
  'RequestRefused',
  {
    actor: string | null;
    action: string;
    method: string;
    path: string;
    project_id: string | null;
    code: string;
    status: number;
  }
>;

export type RequestEvent = RequestReceived | RequestRefused;

export const REQUEST_EVENT_VERSIONS: Record<RequestEvent['type'], number> = { RequestReceived: 1, RequestRefused: 1 };
export const REQUEST_STREAM_PREFIX = 'request-';
