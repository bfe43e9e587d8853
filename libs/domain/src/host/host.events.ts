import { DomainEvent } from '../events/domain-event';

/**
 * What happens to host agents' admission, for the audit trail. Tokens and credentials never appear in
 * an event, not even as digests: the `hosts` and `host_enrollments` tables keep the digests, the
 * events keep who did what to which host.
 */

/** Ops created a one-time bootstrap token to enroll one host in the cluster. */
export type HostEnrollmentCreated = DomainEvent<
  'HostEnrollmentCreated',
  { enrollment_id: string; cluster_id: string; expires_at: string; created_by: string }
>;

/**
 * A host enrolled with a bootstrap token and got a credential; `re_enrolled` when the host was enrolled
 * before (the same token retried, or a new token for a reinstalled machine): same host id, new credential.
 */
export type HostEnrolled = DomainEvent<
  'HostEnrolled',
  {
    host_id: string;
    cluster_id: string;
    enrollment_id: string;
    identity: string;
    hostname: string;
    re_enrolled: boolean;
    client_address: string | null;
  }
>;

/** Ops revoked the host: its credential authenticates nothing from here on. */
export type HostRevoked = DomainEvent<'HostRevoked', { host_id: string; cluster_id: string }>;

/** Ops replaced the host's credential: the old one authenticates nothing from here on. */
export type HostCredentialRotated = DomainEvent<'HostCredentialRotated', { host_id: string; cluster_id: string }>;

export type HostEvent = HostEnrollmentCreated | HostEnrolled | HostRevoked | HostCredentialRotated;
export type HostEventType = HostEvent['type'];

export const HOST_EVENT_VERSIONS: Record<HostEventType, number> = {
  HostEnrollmentCreated: 1,
  HostEnrolled: 1,
  HostRevoked: 1,
  HostCredentialRotated: 1,
};

/** One stream per host (enrolled, revoked, rotated) and one per enrollment token. */
export const HOST_STREAM_PREFIX = 'host-';
export const HOST_ENROLLMENT_STREAM_PREFIX = 'hostenrollment-';
export const hostStreamId = (hostId: string) => `${HOST_STREAM_PREFIX}${hostId}`;
export const hostEnrollmentStreamId = (enrollmentId: string) => `${HOST_ENROLLMENT_STREAM_PREFIX}${enrollmentId}`;

export function hostEvent<T extends HostEvent>(type: T['type'], data: T['data']): T {
  return { type, version: HOST_EVENT_VERSIONS[type], data } as T;
}
