import { createHcpUpcasters } from '../hcp-events';
import { DomainEvent } from '../events/domain-event';
import { AuditRecord, auditRecordOf, AuditSource } from './audit-record';

const LONG_PROJECT = 'p'.repeat(201);

function source(event: DomainEvent, streamId = 'request-1'): AuditSource {
  return {
    event: event as AuditSource['event'],
    event_id: '00000000-0000-4000-8000-000000000001',
    stream_id: streamId,
    occurred_at: '2026-12-03T08:00:00.000Z',
    actor: 'tom',
    trace_id: 'trace-1',
  };
}

/** What the message envelope checks of an audit record (libs/messaging: at most 200 characters). */
function envelopeSafe(record: AuditRecord | null): boolean {
  return (
    record !== null &&
    (record.project_id === null || record.project_id.length <= 200) &&
    `audit.${record.action}`.length <= 200 &&
    (record.trace_id === null || record.trace_id.length <= 200)
  );
}

const upcast = (event: DomainEvent) => createHcpUpcasters().upcast(event);

describe('audit records', () => {
  it('carry the field names of the API (timestamp, error_code), not occurred_at', () => {
    const record = auditRecordOf(
      source({
        type: 'RequestRefused',
        version: 2,
        data: {
          actor: null,
          action: 'GET /v1/projects/:project_id/vms',
          method: 'GET',
          route: '/v1/projects/:project_id/vms',
          target: { project_id: 'p' },
          project_id: 'p',
          rejected: {},
          code: 'UNAUTHORIZED',
          status: 401,
        },
      }),
      null,
    );
    expect(record).toMatchObject({
      timestamp: '2026-12-03T08:00:00.000Z',
      result: 'denied',
      error_code: 'UNAUTHORIZED',
    });
    expect(record).not.toHaveProperty('occurred_at');
  });

  it('turn a stored v1 refusal with a 201-character project id into a record the envelope accepts', () => {
    const stored = {
      type: 'RequestRefused',
      version: 1,
      data: {
        actor: null,
        action: 'GET /v1/projects/:project_id/vms',
        method: 'GET',
        path: `/v1/projects/${LONG_PROJECT}/vms?access_token=secret`,
        project_id: LONG_PROJECT,
        code: 'UNAUTHORIZED',
        status: 401,
      },
    };
    const record = auditRecordOf(source(upcast(stored)), null)!;
    expect(envelopeSafe(record)).toBe(true);
    expect(record.project_id).toBeNull();
    expect(record.target).toEqual({});
    expect(record.details).toMatchObject({
      route: '/v1/projects/:project_id/vms',
      rejected: { project_id: { length: 201 } },
    });
    expect(JSON.stringify(record)).not.toContain('secret');
  });

  it('turn a stored v1 received request with an invalid project id into a record with project_id null', () => {
    const stored = {
      type: 'RequestReceived',
      version: 1,
      data: {
        actor: 'olga',
        action: 'POST /v1/projects/:project_id/vms',
        method: 'POST',
        path: `/v1/projects/${LONG_PROJECT}/vms`,
        scope: 'tenant',
        project_id: LONG_PROJECT,
        target: { project_id: LONG_PROJECT },
      },
    };
    const record = auditRecordOf(source(upcast(stored)), null)!;
    expect(envelopeSafe(record)).toBe(true);
    expect(record).toMatchObject({ project_id: null, result: 'received', target: {} });
  });

  it('bound an event the upcasters do not sanitise (a stored break-glass use) when mapping it', () => {
    const record = auditRecordOf(
      source(
        {
          type: 'BreakGlassUsed',
          version: 1,
          data: {
            actor: 'bea',
            reason: 'r'.repeat(10_000),
            method: 'GET',
            path: `/v1/projects/${LONG_PROJECT}/vms?access_token=secret`,
            project_id: LONG_PROJECT,
            ops_roles: ['break-glass'],
          },
        },
        'breakglass-1',
      ),
      null,
    )!;
    expect(envelopeSafe(record)).toBe(true);
    expect(record.project_id).toBeNull();
    expect(record.details.rejected_project_id).toEqual({ length: 201, prefix: `${'p'.repeat(31)}…` });
    expect(JSON.stringify(record)).not.toContain('secret');
    expect((record.details.reason as string).length).toBeLessThanOrEqual(512);
  });

  it('record an answered request as accepted with its job, or failed with its error code', () => {
    const answered = (status: number, error_code: string | null, job_id: string | null) =>
      auditRecordOf(
        source({
          type: 'RequestAnswered',
          version: 1,
          data: {
            actor: 'tom',
            action: 'POST /v1/projects/:project_id/vms',
            method: 'POST',
            route: '/v1/projects/:project_id/vms',
            scope: 'tenant',
            project_id: 'p',
            target: { project_id: 'p' },
            status,
            error_code,
            job_id,
          },
        }),
        null,
      );
    expect(answered(202, null, 'j-1')).toMatchObject({
      result: 'accepted',
      target: { project_id: 'p', job_id: 'j-1' },
      details: { status: 202 },
    });
    expect(answered(202, null, 'j-1')).not.toHaveProperty('error_code');
    expect(answered(400, 'VALIDATION_FAILED', null)).toMatchObject({
      result: 'failed',
      error_code: 'VALIDATION_FAILED',
    });
  });

  it('give a failed job step its error code', () => {
    const record = auditRecordOf(
      source(
        {
          type: 'JobFailed',
          version: 1,
          data: { attempt: 1, error: { code: 'PROVIDER_ERROR', message: 'boom' } },
        } as DomainEvent,
        'job-j1',
      ),
      { project_id: 'p', type: 'vm.create', resource_id: 'v1', actor: 'tom' },
    );
    expect(record).toMatchObject({ result: 'failed', error_code: 'PROVIDER_ERROR', action: 'vm.create' });
  });

  it('records an ops recovery of a job as job.recover by the ops actor, with the action and the reason', () => {
    const record = auditRecordOf(
      {
        ...source(
          {
            type: 'JobRecovered',
            version: 1,
            data: { action: 'mark-failed', reason: 'VM fixed by hand', previous_status: 'running', deadline: null },
          } as DomainEvent,
          'job-j1',
        ),
        actor: 'ops:olga',
      },
      { project_id: 'p', type: 'vm.stop', resource_id: 'v1', actor: 'tom' },
    );
    expect(record).toMatchObject({
      actor: 'ops:olga',
      action: 'job.recover',
      target: { job_id: 'j1', vm_id: 'v1' },
      project_id: 'p',
      result: 'succeeded',
      details: { action: 'mark-failed', reason: 'VM fixed by hand', previous_status: 'running' },
    });
  });
});
