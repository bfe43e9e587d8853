import { decodeBase64, parseSshPublicKey, SSH_KEY_MAX_LENGTH } from './ssh-public-key';

// Made with ssh-keygen.
const KEYS = {
  'ssh-rsa':
    'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCznARmjaRMrpijNmA3PAcPioHKBiXi+YgvwryLNInUFfZQGw605IZ9aRXrbdZAIpnVzX/3Bv8JAIu6SKBxWYiC9RTKyp6ZV9k+u99W607mhmByHe/m3DRmSSUAaUfpItpmyQVn1tXLRfXlxGCXTJjgPzGkDn9bHadA8gt74vgseQoRBI7i/+1MZ5jmsY/Pvk8hN4WcpkycQg/4wgEH5+UyFcMPC8+CNR2G0WY7l8RLT/XQoP5OXScs8jhqw3Q0Ek5Yv0YSJsyXty3kdFoZUffRVMCkrpi/qCKP4nfKrExGDepcJTsVXX8elfrsGImdG7slqdQDsMrybGlgGTJGue2R u@h',
  'ssh-ed25519': 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHlZYbNl7rMudkQn9R5hKhsnpmWCKkTr8PiDVkvtdFVY u@h',
  'ecdsa-sha2-nistp256':
    'ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBPo0F643OgDRB0TM9OR3FwXSJ9xLRhLa3V0xFraYPthhxOcX0ABxCqzbLuV8/SsYwTUgQgs+CvyrKzXGCSTwkpw= u@h',
  'ecdsa-sha2-nistp384':
    'ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQAAABhBMTfdz7a533PPRCLTQ+HhGTDWpL7IHXU7MwYDu54OpDwAIz5yKWOUbQF4PVUiSjbZtXsMrlmd4vNwPiBiFvLr2LYurlEMWpDnLKU59bvyf22OQ5XWxzx38GJXfkjM/LmHA== u@h',
  'ecdsa-sha2-nistp521':
    'ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1MjEAAACFBAFtQaGzstMQbmhGc/tONaZtQbW7kM4nIvJEN8Ph4x6VJalZWOvzKCAIoPo5AdqaWSeAkuBDLNz9VnxySsg3hHoErwHLCSnnvRtrjbZt00h9XX5LKVj0kAjVAUusbaR69F29FPubU6QPEAvyg6ZX8yPq9nhC/czS+rrFZ2KkNlmKuaikpg== u@h',
};

/** An SSH wire blob: each part as a uint32 length and its bytes. */
function blob(...parts: Array<string | Buffer>): string {
  return Buffer.concat(
    parts.map((p) => {
      const bytes = typeof p === 'string' ? Buffer.from(p, 'latin1') : p;
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.length);
      return Buffer.concat([length, bytes]);
    }),
  ).toString('base64');
}

const problemOf = (line: string) => {
  const parsed = parseSshPublicKey(line);
  return parsed.ok ? undefined : parsed.problem;
};

describe('parseSshPublicKey', () => {
  it.each(Object.entries(KEYS))('accepts a %s key made by ssh-keygen, with its comment', (type, line) => {
    expect(parseSshPublicKey(line)).toEqual({
      ok: true,
      key: { type, blob: line.split(' ')[1], comment: 'u@h' },
    });
  });

  it('accepts the security-key types, whose blobs also name their application', () => {
    const ed = `sk-ssh-ed25519@openssh.com ${blob('sk-ssh-ed25519@openssh.com', Buffer.alloc(32, 7), 'ssh:')}`;
    const ec = `sk-ecdsa-sha2-nistp256@openssh.com ${blob('sk-ecdsa-sha2-nistp256@openssh.com', 'nistp256', Buffer.alloc(65, 4), 'ssh:')}`;
    expect(problemOf(ed)).toBeUndefined();
    expect(problemOf(ec)).toBeUndefined();
  });

  it('accepts a key without a comment and keeps spaces inside the comment', () => {
    const bare = KEYS['ssh-ed25519'].replace(/ u@h$/, '');
    expect(parseSshPublicKey(bare)).toEqual({ ok: true, key: { type: 'ssh-ed25519', blob: bare.split(' ')[1] } });
    const parsed = parseSshPublicKey(`${bare} laptop of ana`);
    expect(parsed.ok && parsed.key.comment).toBe('laptop of ana');
  });

  it('refuses a key type ssh-keygen would refuse or Proxmox no longer takes (DSA)', () => {
    expect(problemOf(KEYS['ssh-ed25519'].replace('ssh-ed25519', 'ssh-dss'))).toMatch(/unsupported key type/);
    expect(problemOf(KEYS['ssh-ed25519'].replace('ssh-ed25519', 'ssh-foo'))).toMatch(/unsupported key type/);
  });

  it('refuses a blob that is not base64', () => {
    expect(problemOf('ssh-ed25519 AAAA$$$$ u@h')).toMatch(/base64/);
    expect(problemOf('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHlZY u@h')).toMatch(/base64/);
    expect(problemOf('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 u@h')).toMatch(/32-byte/);
  });

  it('refuses a blob whose embedded type is not the declared one', () => {
    const line = KEYS['ssh-ed25519'].replace(/^ssh-ed25519/, 'ssh-rsa');
    expect(problemOf(line)).toBe('declares ssh-rsa but its key blob is of type ssh-ed25519');
    const curve = KEYS['ecdsa-sha2-nistp256'].replace(/^ecdsa-sha2-nistp256/, 'ecdsa-sha2-nistp384');
    expect(problemOf(curve)).toMatch(/declares ecdsa-sha2-nistp384/);
  });

  it('refuses truncated or padded blobs', () => {
    expect(problemOf(`ssh-ed25519 ${blob('ssh-ed25519', Buffer.alloc(16))}`)).toMatch(/32-byte/);
    expect(problemOf(`ssh-ed25519 ${blob('ssh-ed25519', Buffer.alloc(32), 'extra')}`)).toMatch(/trailing/);
    expect(problemOf(`ssh-rsa ${blob('ssh-rsa', Buffer.from([1, 0, 1]))}`)).toMatch(/modulus/);
    expect(problemOf(`ecdsa-sha2-nistp256 ${blob('ecdsa-sha2-nistp256', 'nistp384', Buffer.alloc(65))}`)).toMatch(
      /curve/,
    );
  });

  it('refuses more than one line, an overlong key or comment, and a missing blob', () => {
    expect(problemOf(`${KEYS['ssh-ed25519']}\n${KEYS['ssh-ed25519']}`)).toBe('must be a single line');
    expect(problemOf(`${KEYS['ssh-ed25519']} ${'x'.repeat(SSH_KEY_MAX_LENGTH)}`)).toMatch(/longer than 8192/);
    expect(problemOf(`${KEYS['ssh-ed25519']}${'c'.repeat(300)}`)).toMatch(/comment longer than 255/);
    expect(problemOf('ssh-ed25519')).toMatch(/<type> <base64 key>/);
  });
});

describe('decodeBase64', () => {
  it('decodes padded standard base64 and refuses anything else', () => {
    expect(Array.from(decodeBase64('AQID')!)).toEqual([1, 2, 3]);
    expect(Array.from(decodeBase64('AQI=')!)).toEqual([1, 2]);
    expect(Array.from(decodeBase64('AQ==')!)).toEqual([1]);
    expect(decodeBase64('AQ')).toBeUndefined();
    expect(decodeBase64('A-_B')).toBeUndefined();
    expect(decodeBase64('')).toBeUndefined();
  });
});
