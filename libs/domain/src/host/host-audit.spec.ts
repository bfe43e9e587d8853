import { auditRecordOf } from '../audit/audit-record';
import { createHcpEventSchemas } from '../hcp-event-schemas';
import { HostEnrolled, HostEnrollmentCreated, hostEvent, HostRevoked } from './host.events';

const source = (event: ReturnType<typeof hostEvent>, actor: string) => ({
  event,
  event_id: 'e-1',
  stream_id: 'host-h-1',
  occurred_at: '2026-12-03T12:00:00.000Z',
  actor,
  trace_id: 't-1',
});

describe('host events in the audit trail', () => {
  it('records who created an enrollment token for which cluster, and no token', () => {
    const created = hostEvent<HostEnrollmentCreated>('HostEnrollmentCreated', {
      enrollment_id: 'en-1',
      cluster_id: 'c-1',
      expires_at: '2026-12-03T12:15:00.000Z',
      created_by: 'ingrid',
    });
    expect(auditRecordOf(source(created, 'ingrid'), null)).toMatchObject({
      actor: 'ingrid',
      action: 'host.enrollment.create',
      target: { cluster_id: 'c-1', enrollment_id: 'en-1' },
      project_id: null,
      result: 'succeeded',
    });
  });

  it('records an enrollment as the host, with its identity and where it came from', () => {
    const enrolled = hostEvent<HostEnrolled>('HostEnrolled', {
      host_id: 'h-1',
      cluster_id: 'c-1',
      enrollment_id: 'en-1',
      identity: 'kvm-1',
      hostname: 'kvm-1.lab',
      re_enrolled: true,
      client_address: '10.0.0.7',
    });
    expect(auditRecordOf(source(enrolled, 'host:h-1'), null)).toMatchObject({
      actor: 'host:h-1',
      action: 'host.enroll',
      target: { cluster_id: 'c-1', host_id: 'h-1', enrollment_id: 'en-1' },
      details: { identity: 'kvm-1', re_enrolled: true, client_address: '10.0.0.7' },
    });
  });

  it('records revocations by ops, and every host event passes its schema', () => {
    const revoked = hostEvent<HostRevoked>('HostRevoked', { host_id: 'h-1', cluster_id: 'c-1' });
    expect(auditRecordOf(source(revoked, 'ingrid'), null)).toMatchObject({ action: 'host.revoke', actor: 'ingrid' });
    expect(() => createHcpEventSchemas().check(revoked)).not.toThrow();
  });
});
