import { describeEnrollFailure } from './enrollment';
import { HcpStatusError, HcpUnreachableError } from './hcp-client';
import { renewIntervalOf } from './host-call-runner';

const hcp = 'https://hcp.example:8443';
const enrollUrl = `${hcp}/internal/v1/enroll`;

describe('describeEnrollFailure', () => {
  it.each([
    [
      new HcpUnreachableError(enrollUrl, 'ECONNREFUSED', 'connect ECONNREFUSED'),
      /HCP at https:\/\/hcp.example:8443 is unreachable \(ECONNREFUSED/,
    ],
    [
      new HcpUnreachableError(enrollUrl, 'DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'),
      /TLS with .* failed \(DEPTH_ZERO_SELF_SIGNED_CERT.*--ca-file/,
    ],
    [new HcpUnreachableError(enrollUrl, 'ERR_TLS_CERT_ALTNAME_INVALID', 'wrong name'), /TLS with .* failed/],
    [
      new HcpStatusError(enrollUrl, 401, 'UNAUTHORIZED', 'bootstrap token expired'),
      /refused the bootstrap token \(401: bootstrap token expired\).*new one/,
    ],
    [
      new HcpStatusError(enrollUrl, 409, 'CONFLICT', 'token enrolled another identity'),
      /already enrolled another host \(409: token enrolled another identity\)/,
    ],
    [
      new HcpStatusError(enrollUrl, 404, undefined, undefined),
      /internal\/v1\/enroll is not HCP's internal router \(404\); check --hcp/,
    ],
    [
      new HcpStatusError(enrollUrl, 503, 'PROVIDER_UNAVAILABLE', 'draining'),
      /HCP answered 503 PROVIDER_UNAVAILABLE: draining/,
    ],
  ])('says in one line why enrolling failed: %s', (err, message) => {
    const line = describeEnrollFailure(err, hcp);
    expect(line).toMatch(/^cannot enroll: /);
    expect(line).toMatch(message);
    expect(line).not.toContain('\n');
  });
});

describe('renewIntervalOf', () => {
  it('renews at a third of the lease, so two renewals may be lost before it runs out', () => {
    expect(renewIntervalOf(30_000)).toBe(10_000);
    expect(renewIntervalOf(1_500)).toBe(500);
  });
});
