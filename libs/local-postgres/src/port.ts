import * as net from 'node:net';
import * as path from 'node:path';
import { CLUSTER_DIR, Context, PORT_FILE } from './context';
import { identify, readPidFile } from './process-identity';
import { launch } from './server-process';
import { EmbeddedPostgresLogger, readIfExists, writeFileAtomically } from './support';

/**
 * The server's loopback port when none is configured: chosen free the first time a data folder is used
 * and remembered in it (`<dataDir>/postgres.port`), so the folder keeps its port across restarts (and a
 * server left running by a killed HCP is found there), while two data folders never share one. When
 * something else has taken the remembered port by the next start, another free one is chosen and
 * remembered instead.
 */

/** A few tries against programs that grab the port between our check and the server's own bind. */
const MAX_LAUNCH_ATTEMPTS = 3;

export function isValidPort(port: number): boolean {
  return Number.isInteger(port) && port >= 1 && port <= 65535;
}

/** The port remembered for the data folder; the first time, a free one, remembered from now on. */
export async function portOfDataFolder(dataDir: string, logger: EmbeddedPostgresLogger): Promise<number> {
  const file = path.join(dataDir, PORT_FILE);
  const text = (await readIfExists(file))?.trim();
  if (text !== undefined) {
    if (/^\d+$/.test(text) && isValidPort(Number(text))) return Number(text);
    logger.warn(
      `embedded PostgreSQL: ${file} holds no port number (${JSON.stringify(text.slice(0, 40))}); choosing a new port`,
    );
  }
  // A folder from before ports were remembered (or whose file was lost) may have its server still running.
  const pgdata = path.join(dataDir, CLUSTER_DIR);
  const running = await readPidFile(pgdata);
  if (running?.pid !== undefined && running.port !== undefined && (await identify(running.pid, pgdata)) === 'ours') {
    await rememberPort(dataDir, running.port);
    return running.port;
  }
  const port = await chooseFreePort();
  await rememberPort(dataDir, port);
  logger.log(`embedded PostgreSQL: chose port ${port} for ${dataDir} (remembered in ${file})`);
  return port;
}

/**
 * Launches the server on the data folder's port, first moving to another free port (and remembering it)
 * when something else listens there. Only for a port of our choosing: a configured port is used as is.
 */
export async function launchOnFreePort(ctx: Context): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    if (!(await isPortFree(ctx.port))) await movePort(ctx);
    try {
      return await launch(ctx);
    } catch (error) {
      // Lost a race for the port: something bound it between the check and the server's bind.
      if (attempt >= MAX_LAUNCH_ATTEMPTS || (await isPortFree(ctx.port))) throw error;
    }
  }
}

async function movePort(ctx: Context): Promise<void> {
  const taken = ctx.port;
  ctx.port = await chooseFreePort();
  await rememberPort(ctx.dataDir, ctx.port);
  ctx.logger.warn(
    `embedded PostgreSQL: port ${taken}, remembered for ${ctx.dataDir}, is taken by another program; ` +
      `using port ${ctx.port} from now on (remembered in ${path.join(ctx.dataDir, PORT_FILE)})`,
  );
}

async function rememberPort(dataDir: string, port: number): Promise<void> {
  await writeFileAtomically(path.join(dataDir, PORT_FILE), `${port}\n`, 0o644);
}

/** Whether a server could listen on 127.0.0.1:`port` now (it binds the way postgres does, with SO_REUSEADDR). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/** A loopback port nothing listens on, as the kernel hands them out. */
export function chooseFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
