import { HcpError } from '@hcp/domain';
import { parseTlsTrust } from './tls-trust';

/** What parseTlsTrust throws for `raw`, or undefined when it accepts it. */
function refusalOf(raw: unknown): unknown {
  try {
    parseTlsTrust(raw);
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('parseTlsTrust', () => {
  it('normalises fingerprints and checks PEMs', () => {
    const fp = `${'AB:'.repeat(31)}AB`;
    expect(parseTlsTrust({ fingerprint_sha256: fp })).toEqual({ fingerprint_sha256: 'ab'.repeat(32) });
    expect(parseTlsTrust(undefined)).toEqual({});
    const shortPin = refusalOf({ fingerprint_sha256: 'AB:CD' });
    expect(shortPin).toBeInstanceOf(HcpError);
    expect(shortPin).toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'fingerprint_sha256 must be 32 hex bytes (AB:CD:... as Proxmox shows it)',
      details: { fields: [{ field: 'tls.fingerprint_sha256' }] },
    });
    expect(refusalOf({ ca_pem: 'not a pem' })).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { fields: [{ field: 'tls.ca_pem' }] },
    });
  });
});
