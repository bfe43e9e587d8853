import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  CredentialFileError,
  credentialPathOf,
  readCredential,
  replaceCredential,
  writeCredential,
} from './credential-file';

const credential = { host_id: 'host-1', cluster_id: 'cluster-1', credential: 'hcph_secret', hcp: 'http://hcp:8080' };

describe('the credential file', () => {
  let root: string;
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'hcp-agent-cred-'));
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('is written private to the agent (file 0600, state dir 0700) and read back', async () => {
    const stateDir = path.join(root, 'state');
    await writeCredential(stateDir, credential);
    expect((await fs.stat(stateDir)).mode & 0o777).toBe(0o700);
    expect((await fs.stat(credentialPathOf(stateDir))).mode & 0o777).toBe(0o600);
    await expect(readCredential(stateDir)).resolves.toEqual(credential);
  });

  it('leaves no temporary file beside it', async () => {
    await writeCredential(root, credential);
    expect(await fs.readdir(root)).toEqual(['credential.json']);
  });

  it('tightens a state dir that others could list', async () => {
    await fs.chmod(root, 0o755);
    await writeCredential(root, credential);
    expect((await fs.stat(root)).mode & 0o777).toBe(0o700);
  });

  it('replaces an earlier credential whole', async () => {
    await writeCredential(root, credential);
    await writeCredential(root, { ...credential, credential: 'hcph_rotated' });
    await expect(readCredential(root)).resolves.toMatchObject({ credential: 'hcph_rotated' });
  });

  it('is absent (null) before the host enrolled', async () => {
    await expect(readCredential(path.join(root, 'never'))).resolves.toBeNull();
  });

  it.each([0o644, 0o640, 0o604, 0o660])('is refused with mode %o, saying why and what to do', async (mode) => {
    await writeCredential(root, credential);
    const file = credentialPathOf(root);
    await fs.chmod(file, mode);
    const read = readCredential(root);
    await expect(read).rejects.toThrow(CredentialFileError);
    await expect(readCredential(root)).rejects.toThrow(
      new RegExp(`${file} has mode ${mode.toString(8)}: group or others may read it.*chmod 600`),
    );
  });

  it('is refused when it is not a credential, saying to enroll again', async () => {
    await fs.writeFile(credentialPathOf(root), '{"host_id":"h"', { mode: 0o600 });
    await expect(readCredential(root)).rejects.toThrow(/is not JSON; remove it and enroll again/);
    await fs.writeFile(credentialPathOf(root), '{"host_id":"h"}', { mode: 0o600 });
    await expect(readCredential(root)).rejects.toThrow(/lacks cluster_id, credential, hcp/);
  });

  it('takes a rotated credential in place of the stored one, keeping the host, cluster and HCP address', async () => {
    await writeCredential(root, credential);
    await replaceCredential(root, 'hcph_rotated');
    await expect(readCredential(root)).resolves.toEqual({ ...credential, credential: 'hcph_rotated' });
    expect((await fs.stat(credentialPathOf(root))).mode & 0o777).toBe(0o600);
  });

  it('has no credential to replace before the host enrolled', async () => {
    await expect(replaceCredential(root, 'hcph_rotated')).rejects.toThrow(/not enrolled .*no credential to replace/);
  });
});
