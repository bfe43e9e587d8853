import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '@hcp/local-postgres';

// Helpers of the @hcp/local-postgres suites: real initdb and postgres processes, in temporary folders
// that afterAll() cleans up (each test file has its own copy of this module's state).

export const MODULE_PATH = path.resolve(__dirname, '../../../libs/local-postgres/src/index.ts');
const REPO_ROOT = path.resolve(__dirname, '../../..');

export interface Recorder {
  logger: { log(msg: string): void; warn(msg: string): void };
  messages: string[];
}

export function recorder(): Recorder {
  const messages: string[] = [];
  return { messages, logger: { log: (m) => messages.push(m), warn: (m) => messages.push(`WARN ${m}`) } };
}

const tempDirs: string[] = [];
const servers: EmbeddedPostgres[] = [];
const children: ChildProcess[] = [];

export async function tempDataDir(): Promise<string> {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'hcp-local-pg-')));
  tempDirs.push(dir);
  return dir;
}

/** Starts a server for the test; `port` undefined lets the data folder choose. */
export async function start(
  dataDir: string,
  port: number | undefined,
  rec = recorder(),
  options: { supervise?: boolean } = {},
): Promise<EmbeddedPostgres> {
  const server = await startEmbeddedPostgres({ dataDir, port, logger: rec.logger, ...options });
  servers.push(server);
  return server;
}

/** A port above 55000 that nothing listens on now; random so parallel runs rarely even try the same one. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 55_001 + Math.floor(Math.random() * 9_000);
    const free = await new Promise<boolean>((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port above 55000');
}

/** Listens on 127.0.0.1:`port` until closed, like an unrelated program holding the port. */
export async function squat(port: number): Promise<{ close(): Promise<void> }> {
  const squatter = net.createServer();
  await new Promise<void>((resolve, reject) => {
    squatter.once('error', reject);
    squatter.listen(port, '127.0.0.1', resolve);
  });
  return { close: () => new Promise<void>((resolve) => squatter.close(() => resolve())) };
}

export async function query<T extends object>(
  connectionString: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new Client({ connectionString });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

export async function postmasterPid(dataDir: string): Promise<number | undefined> {
  const text = await fs.readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : Number.parseInt(text.split('\n')[0] ?? '', 10);
}

/** The port remembered in the data folder, if any. */
export async function rememberedPort(dataDir: string): Promise<number | undefined> {
  const text = await fs.readFile(path.join(dataDir, 'postgres.port'), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : Number(text.trim());
}

/** Live processes whose working directory is the cluster: the postmaster and its children. */
export async function serverProcesses(dataDir: string): Promise<number[]> {
  const pgdata = path.join(dataDir, 'postgres');
  const found: number[] = [];
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cwd = await fs.readlink(`/proc/${entry}/cwd`).catch(() => undefined);
    const stat = await fs.readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const zombie = stat.charAt(stat.lastIndexOf(')') + 2) === 'Z';
    if (cwd === pgdata && !zombie) found.push(Number(entry));
  }
  return found;
}

/**
 * Another Node process that starts the server the way HCP does (on `port`, or on the data folder's own
 * port when undefined), reports its connection string and then idles until it is killed.
 */
export async function startInChild(
  dataDir: string,
  port: number | undefined,
): Promise<{ child: ChildProcess; connectionString: string }> {
  const script = `
    const { startEmbeddedPostgres } = require(${JSON.stringify(MODULE_PATH)});
    const port = process.env.EP_PORT ? Number(process.env.EP_PORT) : undefined;
    startEmbeddedPostgres({ dataDir: process.env.EP_DATA_DIR, port }).then(
      (server) => {
        process.stdout.write(JSON.stringify({ connectionString: server.connectionString }) + '\\n');
        setInterval(() => undefined, 60_000);
      },
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );`;
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      EP_DATA_DIR: dataDir,
      EP_PORT: port === undefined ? '' : String(port),
      TS_NODE_PROJECT: path.join(REPO_ROOT, 'tsconfig.json'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const connectionString = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve((JSON.parse(line) as { connectionString: string }).connectionString);
    });
    child.once('exit', (code) => reject(new Error(`child exited with ${code}: ${stderr}`)));
  });
  return { child, connectionString };
}

export async function sigkill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

export async function waitFor(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Stops every server and child of the test file and removes its folders; call from afterAll. */
export async function cleanUp(): Promise<void> {
  for (const server of servers) await server.stop().catch(() => undefined);
  for (const child of children) await sigkill(child);
  // A server orphaned by a failed test would outlive the run: stop whatever still serves our temp dirs.
  for (const dir of tempDirs) {
    const pid = await postmasterPid(dir);
    if (pid !== undefined && (await serverProcesses(dir)).includes(pid)) {
      process.kill(pid, 'SIGINT');
      await waitFor(async () => (await serverProcesses(dir)).length === 0).catch(() => undefined);
    }
    await fs.rm(dir, { recursive: true, force: true });
  }
}
