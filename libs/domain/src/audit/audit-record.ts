import { ConsoleSessionEvent } from '../console/console-session.events';
import { JobEvent } from '../job/job.events';
import { OpsResourceEvent } from '../ops/ops-resources';
import { RequestEvent } from '../security/request.events';
import { BreakGlassUsed } from '../security/security.events';
import { RequestRefusalsSuppressed } from '../refusal/refusal.events';

/** One line of the audit trail, as auditors query it and as `hcp.audit.v1` carries it. */
export interface AuditRecord {
  /** The id of the event it comes from: stable, so consumers de-duplicate by it. */
  event_id: string;
  occurred_at: string;
  actor: string | null;
  action: string;
  target: Record<string, string>;
  project_id: string | null;
  result: string;
  trace_id: string | null;
  details: Record<string, unknown>;
}

/** What the audit mapping needs to know about a job, kept from its JobQueued. */
export interface AuditJobInfo {
  project_id: string;
  type: string;
  resource_id: string;
  actor: string;
}

export interface AuditSource {
  event:
    | RequestEvent
    | BreakGlassUsed
    | JobEvent
    | OpsResourceEvent
    | ConsoleSessionEvent
    | { type: string; data: unknown; version: number };
  event_id: string;
  stream_id: string;
  occurred_at: string;
  actor: string | null;
  trace_id: string | null;
}

/**
 * Maps an event to its audit record, or null when the event is not audited. Pure, so the live
 * projection and the auditors' replay from the event store give the very same records.
 */
export function auditRecordOf(source: AuditSource, job: AuditJobInfo | null): AuditRecord | null {
  const base = { event_id: source.event_id, occurred_at: source.occurred_at, trace_id: source.trace_id };
  const e = source.event as RequestEvent | RequestRefusalsSuppressed | BreakGlassUsed | JobEvent | ConsoleSessionEvent;
  switch (e.type) {
    case 'RequestReceived':
      return {
        ...base,
        actor: e.data.actor,
        action: e.data.action,
        target: e.data.target,
        project_id: e.data.project_id,
        result: 'received',
        details: { method: e.data.method, path: e.data.path, scope: e.data.scope },
      };
    case 'RequestRefused':
      return {
        ...base,
        actor: e.data.actor,
        action: e.data.action,
        target: {},
        project_id: e.data.project_id,
        result: `refused:${e.data.code}`,
        details: { method: e.data.method, path: e.data.path, status: e.data.status },
      };
    case 'RequestRefusalsSuppressed':
      // Refusals past the budget, counted instead of recorded one by one (one record per address or actor and window).
      return {
        ...base,
        actor: e.data.actor,
        action: 'request.refusals',
        target: e.data.client_address === null ? {} : { client_address: e.data.client_address },
        project_id: null,
        result: 'suppressed',
        details: {
          suppressed: e.data.suppressed,
          rate_limited: e.data.rate_limited,
          codes: e.data.codes,
          window_start: e.data.window_start,
          window_end: e.data.window_end,
        },
      };
    case 'BreakGlassUsed':
      return {
        ...base,
        actor: e.data.actor,
        action: 'break-glass',
        target: { path: e.data.path },
        project_id: e.data.project_id,
        result: 'allowed',
        details: { reason: e.data.reason, method: e.data.method, ops_roles: e.data.ops_roles },
      };
    case 'JobStarted':
    case 'JobSucceeded':
    case 'JobFailed': {
      if (!job) return null;
      const result = e.type === 'JobStarted' ? 'started' : e.type === 'JobSucceeded' ? 'succeeded' : 'failed';
      const details: Record<string, unknown> = { attempt: e.data.attempt };
      if (e.type === 'JobFailed') details.error = { code: e.data.error.code, message: e.data.error.message };
      return {
        ...base,
        actor: job.actor,
        action: job.type,
        target: { job_id: source.stream_id.slice('job-'.length), vm_id: job.resource_id },
        project_id: job.project_id,
        result,
        details,
      };
    }
    case 'ConsoleSessionOpened':
    case 'ConsoleSessionConnected':
    case 'ConsoleSessionClosed':
    case 'ConsoleSessionRefused': {
      const { session_id, project_id, vm_id } = e.data;
      const target = { vm_id, console_session_id: session_id };
      const record = { ...base, actor: source.actor, target, project_id };
      if (e.type === 'ConsoleSessionOpened')
        return {
          ...record,
          action: 'console.open',
          result: 'opened',
          details: { type: e.data.type, connect_by: e.data.connect_by },
        };
      if (e.type === 'ConsoleSessionConnected')
        return { ...record, action: 'console.connect', result: 'connected', details: { ends_by: e.data.ends_by } };
      if (e.type === 'ConsoleSessionRefused')
        return {
          ...record,
          action: 'console.connect',
          result: `refused:${e.data.reason}`,
          details: e.data.client_address ? { client_address: e.data.client_address } : {},
        };
      return {
        ...record,
        action: 'console.close',
        result: 'closed',
        details: {
          reason: e.data.reason,
          bytes_to_client: e.data.bytes_to_client,
          bytes_to_provider: e.data.bytes_to_provider,
        },
      };
    }
    default:
      return null;
  }
}
