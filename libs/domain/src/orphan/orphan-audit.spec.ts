import { auditRecordOf, AuditSource } from '../audit/audit-record';
import { jobEvent, JobStarted } from '../job/job.events';
import { ORPHAN_OPS_PROJECT, OrphanEvent, orphanEvent } from './orphan.events';

const source = (event: AuditSource['event'], streamId = 'orphan-o-1', actor = 'ingrid'): AuditSource => ({
  event,
  event_id: 'e-1',
  stream_id: streamId,
  occurred_at: '2026-01-01T00:00:00.000Z',
  actor,
  trace_id: 't-1',
});
const recordOf = (event: OrphanEvent, actor = 'ingrid') => auditRecordOf(source(event, 'orphan-o-1', actor), null);

describe('the audit trail of orphans', () => {
  it('records who destroyed an orphan: the request, then the outcome of its job', () => {
    expect(
      recordOf(orphanEvent('OrphanDestroyRequested', { job_id: 'j-1', project_id: 'p1', requested_by: 'ops' })),
    ).toMatchObject({
      actor: 'ingrid',
      action: 'orphan.destroy',
      result: 'accepted',
      target: { orphan_id: 'o-1' },
      project_id: 'p1',
      details: { job_id: 'j-1', requested_by: 'ops' },
    });
    expect(recordOf(orphanEvent('OrphanDestroyed', { job_id: 'j-1' }), 'hcp-worker')).toMatchObject({
      action: 'orphan.destroy',
      result: 'succeeded',
    });
    const failed = recordOf(
      orphanEvent('OrphanDestroyFailed', {
        job_id: 'j-1',
        error: { code: 'PROVIDER_TIMEOUT', message: 'slow', retryable: true },
      }),
    );
    expect(failed).toMatchObject({ action: 'orphan.destroy', result: 'failed', error_code: 'PROVIDER_TIMEOUT' });
  });

  it('records an adoption with the VM that took the resource back', () => {
    expect(
      recordOf(orphanEvent('OrphanAdopted', { vm_id: 'vm-1', project_id: 'p1', power_state: 'running' })),
    ).toMatchObject({ action: 'orphan.adopt', result: 'succeeded', project_id: 'p1', details: { vm_id: 'vm-1' } });
  });

  it('records what a scan found and cleared, as the orphan scanner', () => {
    const found = recordOf(
      orphanEvent('OrphanFound', {
        orphan_id: 'o-1',
        provider_id: 'prov',
        cluster_id: 'cl',
        hcp_id: 'vm-1',
        project_id: null,
        provider_ref: { vmid: 101 },
        power_state: 'stopped',
        hcp_record: 'absent',
        found_at: '2026-01-01T00:00:00.000Z',
      }),
      'hcp-orphans',
    );
    expect(found).toMatchObject({
      actor: 'hcp-orphans',
      action: 'orphan.found',
      project_id: null,
      details: { hcp_id: 'vm-1', hcp_record: 'absent' },
    });
    expect(JSON.stringify(found)).not.toContain('vmid');
    expect(
      recordOf(orphanEvent('OrphanCleared', { reason: 'not_listed', observed_at: '2026-01-01T00:00:00.000Z' })),
    ).toMatchObject({ action: 'orphan.clear', details: { reason: 'not_listed' } });
  });

  it('keeps the reserved ops project out of records: a job on an orphan without a VM record has no project', () => {
    expect(
      recordOf(
        orphanEvent('OrphanDestroyRequested', {
          job_id: 'j-1',
          project_id: ORPHAN_OPS_PROJECT,
          requested_by: 'policy',
        }),
      ),
    ).toMatchObject({ project_id: null, details: { requested_by: 'policy' } });
    const started = auditRecordOf(source(jobEvent<JobStarted>('JobStarted', { attempt: 1, worker: 'w' }), 'job-j-1'), {
      project_id: ORPHAN_OPS_PROJECT,
      type: 'orphan.destroy',
      resource_id: 'o-1',
      actor: 'ingrid',
    });
    expect(started).toMatchObject({
      action: 'orphan.destroy',
      result: 'started',
      project_id: null,
      target: { job_id: 'j-1', orphan_id: 'o-1' },
      details: { attempt: 1 },
    });
    expect(started?.details).not.toHaveProperty('rejected_project_id');
  });

  it('does not audit a scan that only saw an open orphan differently', () => {
    expect(
      recordOf(
        orphanEvent('OrphanObserved', {
          project_id: null,
          provider_ref: {},
          power_state: 'running',
          hcp_record: 'absent',
          observed_at: '2026-01-01T00:00:00.000Z',
        }),
      ),
    ).toBeNull();
  });
});
