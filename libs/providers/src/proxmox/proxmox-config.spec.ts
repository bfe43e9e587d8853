import { HcpError } from '@hcp/domain';
import {
  parseProxmoxCredentials,
  parseProxmoxEndpoint,
  parseProxmoxSettings,
  DEFAULT_PROXMOX_SETTINGS,
} from './proxmox-config';
import { apiError, isLockError, isVmMissing, isVmidTaken, parseErrorBody, redact } from './proxmox-errors';

function thrown(fn: () => unknown): HcpError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HcpError) return err;
    throw err;
  }
  throw new Error('expected a throw');
}

describe('parseProxmoxCredentials', () => {
  it('accepts a token id and secret, a whole token header value, or a user and password', () => {
    expect(parseProxmoxCredentials({ token_id: 'hcp@pve!ci', token_secret: 's3cret' })).toEqual({
      kind: 'token',
      tokenId: 'hcp@pve!ci',
      secret: 's3cret',
    });
    expect(parseProxmoxCredentials({ api_token: 'PVEAPIToken=hcp@pve!ci=a-b=c' })).toEqual({
      kind: 'token',
      tokenId: 'hcp@pve!ci',
      secret: 'a-b=c',
    });
    expect(parseProxmoxCredentials({ username: 'root', realm: 'pam', password: 'pw' })).toEqual({
      kind: 'password',
      username: 'root@pam',
      password: 'pw',
    });
  });

  it('names the bad field and never repeats the secret', () => {
    const err = thrown(() => parseProxmoxCredentials({ api_token: 'nonsense-supersecret' }));
    expect(err.code).toBe('INVALID_REQUEST');
    expect(err.details).toMatchObject({ fields: [{ field: 'credentials.api_token' }] });
    expect(JSON.stringify(err.toShape())).not.toContain('supersecret');
    expect(thrown(() => parseProxmoxCredentials({ username: 'root@pam' })).message).toMatch(/password is required/);
    expect(thrown(() => parseProxmoxCredentials('token')).code).toBe('INVALID_REQUEST');
  });
});

describe('endpoint and settings', () => {
  it('wants https, adds the default port and drops /api2/json', () => {
    expect(parseProxmoxEndpoint('https://pve.example.org/api2/json/').toString()).toBe('https://pve.example.org:8006/');
    expect(parseProxmoxEndpoint('https://10.0.0.1:443').toString()).toBe('https://10.0.0.1/');
    expect(parseProxmoxEndpoint('https://[::1]:9443').port).toBe('9443');
    expect(parseProxmoxEndpoint('https://[::1]').port).toBe('8006');
    expect(thrown(() => parseProxmoxEndpoint('http://pve:8006')).message).toMatch(/https/);
    expect(thrown(() => parseProxmoxEndpoint('https://root:pw@pve:8006')).message).toMatch(/credentials/);
  });

  it('layers cluster hints over provider settings over defaults, checking each field', () => {
    const s = parseProxmoxSettings(
      { storage: 'local-lvm', bridge: 'vmbr1', nodes: ['pve1'] },
      { bridge: 'vmbr2', unrelated: 1 },
    );
    expect(s).toEqual({ ...DEFAULT_PROXMOX_SETTINGS, storage: 'local-lvm', bridge: 'vmbr2', nodes: ['pve1'] });
    expect(thrown(() => parseProxmoxSettings({ shutdown_timeout_s: -1 })).details).toMatchObject({
      fields: [{ field: 'settings.shutdown_timeout_s' }],
    });
    expect(thrown(() => parseProxmoxSettings({ nodes: ['bad_node'] })).code).toBe('INVALID_REQUEST');
  });
});

describe('Proxmox error shapes', () => {
  it('prefers the body message, falls back to the reason phrase, and keeps parameter errors', () => {
    expect(parseErrorBody({ data: null, message: 'VM 101 not running\n' }, 'VM 101 not running')).toEqual({
      message: 'VM 101 not running',
    });
    expect(parseErrorBody({ data: null }, "can't lock file 'x' - got timeout")).toEqual({
      message: "can't lock file 'x' - got timeout",
    });
    expect(
      parseErrorBody({ data: null, errors: { vmid: 'VM 218 already exists' } }, 'Parameter verification failed.'),
    ).toEqual({
      message: 'Parameter verification failed.',
      errors: { vmid: 'VM 218 already exists' },
    });
  });

  it('maps statuses onto the taxonomy and recognises locks, races and missing VMs', () => {
    expect(apiError(400, 'Parameter verification failed.', undefined, 'GET /x').code).toBe('INVALID_REQUEST');
    const refused = apiError(401, 'authentication failure', undefined, 'GET /x');
    expect([refused.code, refused.retryable]).toEqual(['PROVIDER_UNAVAILABLE', false]);
    expect(apiError(596, 'Broken pipe', undefined, 'GET /x').code).toBe('PROVIDER_UNAVAILABLE');
    expect(apiError(501, "Method 'GET /x' not implemented", undefined, 'GET /x').code).toBe('FEATURE_NOT_SUPPORTED');
    expect(isLockError(apiError(500, 'VM is locked (clone)', undefined, 'PUT /x'))).toBe(true);
    expect(
      isLockError(
        apiError(500, "can't lock file '/var/lock/qemu-server/lock-1.conf' - got timeout", undefined, 'PUT /x'),
      ),
    ).toBe(true);
    expect(isVmidTaken(apiError(500, "VM 105 already exists on node 'pve1'", undefined, 'POST /x'))).toBe(true);
    expect(
      isVmidTaken(
        apiError(400, 'Parameter verification failed.', { errors: { vmid: 'VM 218 already exists' } }, 'GET /x'),
      ),
    ).toBe(true);
    expect(
      isVmMissing(
        apiError(500, "Configuration file 'nodes/pve/qemu-server/117.conf' does not exist", undefined, 'GET /x'),
      ),
    ).toBe(true);
    expect(isLockError(new Error('VM is locked'))).toBe(false);
  });

  it('redacts secrets, URL-encoded ones too, in nested details', () => {
    expect(redact({ a: ['x top/secret y', { b: 'top%2Fsecret' }] }, ['top/secret'])).toEqual({
      a: ['x *** y', { b: '***' }],
    });
  });
});
