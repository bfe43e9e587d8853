import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';

/** What enrollment gave this host, kept across restarts: the token is single-use, the credential is not. */
const storedCredentialSchema = z.object({
  host_id: z.string().min(1),
  cluster_id: z.string().min(1),
  credential: z.string().min(1),
  hcp: z.string().min(1),
});
export type StoredCredential = z.infer<typeof storedCredentialSchema>;

/** The credential file exists but cannot be used as it is; the message says why and what to do. */
export class CredentialFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialFileError';
  }
}

export const CREDENTIAL_FILE = 'credential.json';

export const credentialPathOf = (stateDir: string) => path.join(stateDir, CREDENTIAL_FILE);

/** The stored credential, or null when this host has not enrolled yet. */
export async function readCredential(stateDir: string): Promise<StoredCredential | null> {
  const file = credentialPathOf(stateDir);
  let stat: import('node:fs').Stats;
  try {
    stat = await fs.stat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new CredentialFileError(`cannot read ${file}: ${(err as Error).message}`);
  }
  // Whoever can read the file can act as this host towards HCP; a loose mode means it may have leaked.
  const loose = stat.mode & 0o077;
  if (loose !== 0) {
    throw new CredentialFileError(
      `${file} has mode ${(stat.mode & 0o777).toString(8)}: group or others may read it, and it holds this host's credential. ` +
        `Run chmod 600 ${file} if no one else had access; otherwise have ops rotate the host's credential first.`,
    );
  }
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new CredentialFileError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CredentialFileError(`${file} is not JSON; remove it and enroll again with a new bootstrap token`);
  }
  const result = storedCredentialSchema.safeParse(parsed);
  if (!result.success) {
    throw new CredentialFileError(
      `${file} lacks ${result.error.issues.map((i) => i.path.join('.')).join(', ')}; remove it and enroll again with a new bootstrap token`,
    );
  }
  return result.data;
}

/**
 * Writes the credential so that the file is never seen half-written or readable by others: a private
 * temporary file in the state dir, flushed, then renamed over the final name.
 */
export async function writeCredential(stateDir: string, credential: StoredCredential): Promise<string> {
  await fs.mkdir(stateDir, { recursive: true, mode: 0o700 });
  await fs.chmod(stateDir, 0o700);
  const file = credentialPathOf(stateDir);
  const temp = `${file}.${process.pid}.tmp`;
  await fs.rm(temp, { force: true });
  const handle = await fs.open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(credential, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(temp, file);
  const dir = await fs.open(stateDir, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
  return file;
}

/**
 * Puts a rotated credential (POST /v1/ops/hosts/{id}/rotate) in place of the stored one, the same way a new
 * one is written; the host, cluster and HCP address stay.
 */
export async function replaceCredential(stateDir: string, credential: string): Promise<StoredCredential> {
  const stored = await readCredential(stateDir);
  if (!stored) {
    throw new CredentialFileError(
      `this host is not enrolled (no ${credentialPathOf(stateDir)}): there is no credential to replace; enroll with a bootstrap token`,
    );
  }
  const replaced = { ...stored, credential };
  await writeCredential(stateDir, replaced);
  return replaced;
}
