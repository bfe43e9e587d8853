import { ConsoleSessionEvent } from '../console/console-session.events';
import { HostEvent } from '../host/host.events';
import { JOB_RECOVERY_REASON_MAX, JobEvent } from '../job/job.events';
import { OpsResourceEvent } from '../ops/ops-resources';
import { ORPHAN_OPS_PROJECT, OrphanEvent } from '../orphan/orphan.events';
import { RejectedRequestValues, RequestEvent } from '../security/request.events';
import { BreakGlassUsed } from '../security/security.events';
import { RequestRefusalsSuppressed } from '../refusal/refusal.events';
import { VmStateObserved, VmVanished } from '../vm/vm.events';
import {
  BREAK_GLASS_REASON_MAX,
  boundedTarget,
  boundedValue,
  recordedPath,
  recordedProjectId,
} from '../security/request-facts';

/**
 * One line of the audit trail, as auditors query it (`GET /v1/ops/audit`, `npm run admin -- audit replay`) and as
 * `hcp.audit.v1` carries it, with the field names of docs/API.md. A request has a `received` record and
 * an outcome (`accepted`, `failed` with its error code, or `denied` when it was refused); a job's steps
 * then record `started` and `succeeded` or `failed`.
 */
/**
 * The outcomes docs/API.md names (accepted, succeeded, failed, denied), plus the two steps before an
 * outcome that the SRS trail keeps: a request `received` and a job `started`.
 */
export type AuditResult = 'received' | 'accepted' | 'started' | 'succeeded' | 'failed' | 'denied';

export interface AuditRecord {
  /** The id of the event it comes from: stable, so consumers de-duplicate by it. */
  event_id: string;
  timestamp: string;
  actor: string | null;
  action: string;
  target: Record<string, string>;
  project_id: string | null;
  result: AuditResult;
  /** The error code of a `failed` or `denied` outcome. */
  error_code?: string;
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
    | OrphanEvent
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
  const record = recordOf(source, job);
  return record && bounded(record);
}

/**
 * A record every consumer accepts, whatever the event held: events stored before requests were
 * sanitised (RequestReceived/RequestRefused v1 are upcast, BreakGlassUsed is not) may carry project ids
 * and paths of any length, which the message envelope refuses; such a project id becomes null.
 */
function bounded(record: AuditRecord): AuditRecord {
  const project = recordedProjectId(record.project_id);
  return {
    ...record,
    // The envelope's type is `audit.<action>`, at most 200 characters.
    action: boundedValue(record.action, 190),
    actor: record.actor === null ? null : boundedValue(record.actor, 255),
    target: boundedTarget(record.target),
    project_id: project.project_id,
    trace_id: record.trace_id === null ? null : boundedValue(record.trace_id, 200),
    details: project.rejected ? { ...record.details, rejected_project_id: project.rejected } : record.details,
  };
}

function recordOf(source: AuditSource, job: AuditJobInfo | null): AuditRecord | null {
  const base = { event_id: source.event_id, timestamp: source.occurred_at, trace_id: source.trace_id };
  const e = source.event as
    | RequestEvent
    | RequestRefusalsSuppressed
    | BreakGlassUsed
    | JobEvent
    | ConsoleSessionEvent
    | VmStateObserved
    | VmVanished
    | OrphanEvent
    | HostEvent;
  switch (e.type) {
    case 'RequestReceived':
      return {
        ...base,
        actor: e.data.actor,
        action: e.data.action,
        target: e.data.target,
        project_id: e.data.project_id,
        result: 'received',
        details: { method: e.data.method, route: e.data.route, scope: e.data.scope, ...rejected(e.data.rejected) },
      };
    case 'RequestAnswered':
      return {
        ...base,
        actor: e.data.actor,
        action: e.data.action,
        target: e.data.job_id ? { ...e.data.target, job_id: e.data.job_id } : e.data.target,
        project_id: e.data.project_id,
        result: e.data.status < 400 ? 'accepted' : 'failed',
        ...(e.data.error_code === null ? {} : { error_code: e.data.error_code }),
        details: { method: e.data.method, route: e.data.route, scope: e.data.scope, status: e.data.status },
      };
    case 'RequestRefused':
      return {
        ...base,
        actor: e.data.actor,
        action: e.data.action,
        target: e.data.target,
        project_id: e.data.project_id,
        result: 'denied',
        error_code: e.data.code,
        details: { method: e.data.method, route: e.data.route, status: e.data.status, ...rejected(e.data.rejected) },
      };
    case 'RequestRefusalsSuppressed': {
      // Refusals past the budget, counted instead of recorded one by one (one record per address or actor
      // and window): denied, like each of them; the error code when they all had the same one.
      const codes = Object.keys(e.data.codes);
      return {
        ...base,
        actor: e.data.actor,
        action: 'request.refusals',
        target: e.data.client_address === null ? {} : { client_address: e.data.client_address },
        project_id: null,
        result: 'denied',
        ...(codes.length === 1 ? { error_code: codes[0] } : {}),
        details: {
          suppressed: e.data.suppressed,
          rate_limited: e.data.rate_limited,
          codes: e.data.codes,
          window_start: e.data.window_start,
          window_end: e.data.window_end,
        },
      };
    }
    case 'BreakGlassUsed':
      return {
        ...base,
        actor: e.data.actor,
        action: 'break-glass',
        target: { path: recordedPath(e.data.path) },
        project_id: e.data.project_id,
        result: 'accepted',
        details: {
          reason: boundedValue(e.data.reason, BREAK_GLASS_REASON_MAX),
          method: e.data.method,
          ops_roles: e.data.ops_roles,
        },
      };
    case 'JobStarted':
    case 'JobSucceeded':
    case 'JobFailed': {
      if (!job) return null;
      const result: AuditResult =
        e.type === 'JobStarted' ? 'started' : e.type === 'JobSucceeded' ? 'succeeded' : 'failed';
      const details: Record<string, unknown> = { attempt: e.data.attempt };
      if (e.type === 'JobFailed') details.error = { code: e.data.error.code, message: e.data.error.message };
      return {
        ...base,
        actor: job.actor,
        action: job.type,
        target: jobTarget(source.stream_id, job),
        project_id: jobProject(job),
        result,
        ...(e.type === 'JobFailed' ? { error_code: e.data.error.code } : {}),
        details,
      };
    }
    case 'JobRecovered':
      // Who acted is the ops actor of the event, not the tenant who opened the job.
      if (!job) return null;
      return {
        ...base,
        actor: source.actor,
        action: 'job.recover',
        target: jobTarget(source.stream_id, job),
        project_id: jobProject(job),
        result: 'succeeded',
        details: {
          action: e.data.action,
          reason: boundedValue(e.data.reason, JOB_RECOVERY_REASON_MAX),
          previous_status: e.data.previous_status,
        },
      };
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
          result: 'succeeded',
          details: { type: e.data.type, connect_by: e.data.connect_by },
        };
      if (e.type === 'ConsoleSessionConnected')
        return { ...record, action: 'console.connect', result: 'succeeded', details: { ends_by: e.data.ends_by } };
      if (e.type === 'ConsoleSessionRefused')
        return {
          ...record,
          action: 'console.connect',
          result: 'denied',
          error_code: 'UNAUTHORIZED',
          details: {
            reason: e.data.reason,
            ...(e.data.client_address ? { client_address: e.data.client_address } : {}),
          },
        };
      return {
        ...record,
        action: 'console.close',
        result: 'succeeded',
        details: {
          reason: e.data.reason,
          bytes_to_client: e.data.bytes_to_client,
          bytes_to_provider: e.data.bytes_to_provider,
        },
      };
    }
    case 'VmStateObserved':
    case 'VmVanished': {
      // What the provider showed differing from HCP's record; the actor is whoever looked (the reconciler,
      // or the ops principal adopting a failed create's VM).
      const target = { vm_id: source.stream_id.slice('vm-'.length) };
      const record = {
        ...base,
        actor: source.actor,
        target,
        project_id: e.data.project_id,
        result: 'succeeded' as const,
      };
      if (e.type === 'VmVanished')
        return {
          ...record,
          action: 'vm.vanished',
          details: { previous_status: e.data.previous_status, reason: e.data.reason },
        };
      return {
        ...record,
        action: e.data.cause === 'adopted' ? 'vm.adopted' : 'vm.drift_observed',
        details: {
          previous_status: e.data.previous_status,
          power_state: e.data.power_state,
          addresses: e.data.addresses.map((a) => a.address),
        },
      };
    }
    case 'OrphanFound':
    case 'OrphanAdopted':
    case 'OrphanDestroyRequested':
    case 'OrphanDestroyed':
    case 'OrphanDestroyFailed':
    case 'OrphanCleared':
      return orphanRecord(e, base, source);
    case 'HostEnrollmentCreated':
    case 'HostEnrolled':
    case 'HostRevoked':
    case 'HostCredentialRotated':
      return hostRecord(e, base, source);
    default:
      return null;
  }
}

/** A job's target names its resource by kind: the VM of `vm.*` jobs, the orphan of `orphan.*` ones. */
function jobTarget(streamId: string, job: AuditJobInfo): Record<string, string> {
  const resource = job.type.startsWith('orphan.') ? 'orphan_id' : 'vm_id';
  return { job_id: streamId.slice('job-'.length), [resource]: job.resource_id };
}

/** Jobs on orphans HCP has no VM record for run in the reserved ops project, which is no project. */
const jobProject = (job: AuditJobInfo): string | null =>
  job.project_id === ORPHAN_OPS_PROJECT ? null : job.project_id;

/** What ops and HCP's orphan policy did with a provider resource that has no live VM, by whom. */
function orphanRecord(
  e: Exclude<OrphanEvent, { type: 'OrphanObserved' }>,
  base: Pick<AuditRecord, 'event_id' | 'timestamp' | 'trace_id'>,
  source: AuditSource,
): AuditRecord {
  const record = { ...base, actor: source.actor, target: { orphan_id: source.stream_id.slice('orphan-'.length) } };
  switch (e.type) {
    case 'OrphanFound': {
      const { hcp_id, hcp_record, power_state, provider_id, cluster_id, project_id } = e.data;
      return {
        ...record,
        action: 'orphan.found',
        project_id,
        result: 'succeeded',
        details: { hcp_id, hcp_record, power_state, provider_id, cluster_id },
      };
    }
    case 'OrphanAdopted':
      return {
        ...record,
        action: 'orphan.adopt',
        project_id: e.data.project_id,
        result: 'succeeded',
        details: { vm_id: e.data.vm_id, power_state: e.data.power_state },
      };
    case 'OrphanDestroyRequested':
      return {
        ...record,
        action: 'orphan.destroy',
        project_id: e.data.project_id === ORPHAN_OPS_PROJECT ? null : e.data.project_id,
        result: 'accepted',
        details: { job_id: e.data.job_id, requested_by: e.data.requested_by },
      };
    case 'OrphanDestroyed':
      return { ...record, action: 'orphan.destroy', project_id: null, result: 'succeeded', details: e.data };
    case 'OrphanDestroyFailed':
      return {
        ...record,
        action: 'orphan.destroy',
        project_id: null,
        result: 'failed',
        error_code: e.data.error.code,
        details: { job_id: e.data.job_id, error: { code: e.data.error.code, message: e.data.error.message } },
      };
    case 'OrphanCleared':
      return {
        ...record,
        action: 'orphan.clear',
        project_id: null,
        result: 'succeeded',
        details: { reason: e.data.reason },
      };
  }
}

/** Values of the request that were not recorded as given, when there were any. */
function rejected(values: RejectedRequestValues | undefined): { rejected?: RejectedRequestValues } {
  return values && Object.keys(values).length > 0 ? { rejected: values } : {};
}

/** Who admitted, revoked or re-keyed a host agent: never a token or credential, which no event holds. */
function hostRecord(
  e: HostEvent,
  base: Pick<AuditRecord, 'event_id' | 'timestamp' | 'trace_id'>,
  source: AuditSource,
): AuditRecord {
  const record = { ...base, actor: source.actor, project_id: null, result: 'succeeded' as const };
  switch (e.type) {
    case 'HostEnrollmentCreated':
      return {
        ...record,
        action: 'host.enrollment.create',
        target: { cluster_id: e.data.cluster_id, enrollment_id: e.data.enrollment_id },
        details: { expires_at: e.data.expires_at },
      };
    case 'HostEnrolled':
      return {
        ...record,
        action: 'host.enroll',
        target: { cluster_id: e.data.cluster_id, host_id: e.data.host_id, enrollment_id: e.data.enrollment_id },
        details: {
          identity: e.data.identity,
          hostname: e.data.hostname,
          re_enrolled: e.data.re_enrolled,
          ...(e.data.client_address ? { client_address: e.data.client_address } : {}),
        },
      };
    case 'HostRevoked':
      return {
        ...record,
        action: 'host.revoke',
        target: { cluster_id: e.data.cluster_id, host_id: e.data.host_id },
        details: {},
      };
    case 'HostCredentialRotated':
      return {
        ...record,
        action: 'host.rotate',
        target: { cluster_id: e.data.cluster_id, host_id: e.data.host_id },
        details: {},
      };
  }
}
