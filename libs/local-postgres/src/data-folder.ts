import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { childEnv } from './binaries';
import { CLUSTER_DIR, Context, Credentials, DB_USER } from './context';
import { EmbeddedPostgresLogger, errorText, execFileAsync, exists, readIfExists, writeFileAtomically } from './support';

/** The cluster's password, kept in the data folder (mode 0600) because initdb bakes it in. */
export async function loadOrCreateCredentials(
  file: string,
  clusterExists: boolean,
  logger: EmbeddedPostgresLogger,
): Promise<Credentials> {
  const text = await readIfExists(file);
  if (text !== undefined) {
    const parsed: unknown = JSON.parse(text);
    if (!isCredentials(parsed)) throw new Error(`${file} is not {"user": string, "password": string}`);
    const st = await fs.stat(file);
    if ((st.mode & 0o077) !== 0) {
      logger.warn(`${file} was readable by other users; restricting it to mode 0600`);
      await fs.chmod(file, 0o600);
    }
    return parsed;
  }
  if (clusterExists) {
    // A new password would not match the one the cluster was initialised with.
    throw new Error(
      `${file} is missing but the cluster in ${path.join(path.dirname(file), CLUSTER_DIR)} exists; restore the file, or remove the cluster to start empty`,
    );
  }
  const credentials: Credentials = { user: DB_USER, password: randomBytes(24).toString('base64url') };
  // Never half-written: a torn file would lock us out of the cluster made with it.
  await writeFileAtomically(file, `${JSON.stringify(credentials, null, 2)}\n`, 0o600);
  return credentials;
}

function isCredentials(value: unknown): value is Credentials {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.user === 'string' &&
    record.user !== '' &&
    typeof record.password === 'string' &&
    record.password !== ''
  );
}

/**
 * initdb works in a staging folder that is renamed into place when it succeeded, so a process killed
 * during the first start leaves no half-made cluster that later starts would mistake for a real one.
 */
export async function initCluster(ctx: Context): Promise<void> {
  if (await exists(ctx.pgdata)) {
    const entries = await fs.readdir(ctx.pgdata);
    if (entries.length > 0) {
      throw new Error(
        `${ctx.pgdata} is not empty but holds no PostgreSQL cluster (no PG_VERSION); move it away to let HCP create one`,
      );
    }
    await fs.rmdir(ctx.pgdata);
  }
  const staging = `${ctx.pgdata}.initdb`;
  const pwfile = path.join(ctx.dataDir, 'postgres.pwfile');
  await fs.rm(staging, { recursive: true, force: true });
  await fs.mkdir(staging, { mode: 0o700 });
  // initdb reads the password from a file: ours is 0600 inside the data folder, not a default-mode file
  // in the shared /tmp, and it is gone as soon as initdb is.
  await fs.writeFile(pwfile, `${ctx.credentials.password}\n`, { mode: 0o600 });
  const started = Date.now();
  try {
    if (ctx.runAs) {
      await fs.chown(staging, ctx.runAs.uid, ctx.runAs.gid);
      await fs.chown(pwfile, ctx.runAs.uid, ctx.runAs.gid);
    }
    await execFileAsync(
      path.join(ctx.binDir, 'initdb'),
      [
        `--pgdata=${staging}`,
        `--username=${ctx.credentials.user}`,
        `--pwfile=${pwfile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--no-locale',
        // HCP's durable state lives here; checksums turn silent disk corruption into a loud error.
        '--data-checksums',
        '--no-instructions',
      ],
      { env: childEnv(), cwd: ctx.dataDir, ...(ctx.runAs ?? {}) },
    );
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true }).catch(() => undefined);
    throw new Error(`initdb failed: ${errorText(error)}`);
  } finally {
    await fs.rm(pwfile, { force: true });
  }
  await fs.rename(staging, ctx.pgdata);
  ctx.logger.log(`embedded PostgreSQL: created a cluster in ${ctx.pgdata} (${Date.now() - started} ms)`);
}
