import { HcpError } from '../errors';
import { checkOpsSpec, type ProviderSpec } from './ops-resources';

const provider = (endpoint: string | null): ProviderSpec => ({
  name: 'pve',
  type: 'proxmox',
  endpoint,
  tls: {},
  settings: {},
  has_credentials: true,
});

function refusal(endpoint: string): HcpError {
  try {
    checkOpsSpec('provider', provider(endpoint));
  } catch (err) {
    return err as HcpError;
  }
  throw new Error(`${endpoint} was accepted`);
}

describe('checkOpsSpec', () => {
  it('accepts a provider without an endpoint or with an https endpoint', () => {
    expect(() => checkOpsSpec('provider', provider(null))).not.toThrow();
    expect(() => checkOpsSpec('provider', provider('https://pve1.example.org:8006'))).not.toThrow();
  });

  it.each(['https://root:pw@host', 'https://root@host', 'https://:pw@host'])(
    'refuses an endpoint carrying credentials (%s) without echoing them',
    (endpoint) => {
      const err = refusal(endpoint);
      expect(err.code).toBe('INVALID_REQUEST');
      expect(err.details).toEqual({
        fields: [{ field: 'endpoint', problems: [expect.stringContaining('credentials')] }],
      });
      expect(JSON.stringify(err.toShape())).not.toContain('pw');
    },
  );

  it.each([
    ['plain http', 'http://host'],
    ['another scheme', 'ftp://host'],
    ['not a URL', 'not a url'],
    ['longer than 2048 characters', `https://${'a'.repeat(2048)}.example`],
  ])('refuses an endpoint that is %s', (_, endpoint) => {
    expect(refusal(endpoint).code).toBe('INVALID_REQUEST');
  });

  it('leaves specs of other kinds as they are', () => {
    const flavor = { name: 'm1', vcpus: 1, ram_mb: 512, disk_gb: 10, extras: {} };
    expect(checkOpsSpec('flavor', flavor)).toBe(flavor);
  });
});
