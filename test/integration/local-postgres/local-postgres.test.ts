import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '@hcp/local-postgres';

// Real initdb and postgres processes; a first start takes about a second, a child under ts-node a few more.
jest.setTimeout(120_000);

const MODULE_PATH = path.resolve(__dirname, '../../../libs/local-postgres/src/index.ts');
const REPO_ROOT = path.resolve(__dirname, '../../..');

interface Recorder {
  logger: { log(msg: string): void; warn(msg: string): void };
  messages: string[];
}

function recorder(): Recorder {
  const messages: string[] = [];
  return { messages, logger: { log: (m) => messages.push(m), warn: (m) => messages.push(`WARN ${m}`) } };
}

const tempDirs: string[] = [];
const servers: EmbeddedPostgres[] = [];
const children: ChildProcess[] = [];

async function tempDataDir(): Promise<string> {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'hcp-embedded-pg-')));
  tempDirs.push(dir);
  return dir;
}

async function start(dataDir: string, port: number, rec = recorder()): Promise<EmbeddedPostgres> {
  const server = await startEmbeddedPostgres({ dataDir, port, logger: rec.logger });
  servers.push(server);
  return server;
}

/** A port above 55000 that nothing listens on now; random so parallel runs rarely even try the same one. */
async function freePort(): Promise<number> {
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

async function query<T extends object>(connectionString: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

async function postmasterPid(dataDir: string): Promise<number | undefined> {
  const text = await fs.readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : Number.parseInt(text.split('\n')[0] ?? '', 10);
}

/** Live processes whose working directory is the cluster: the postmaster and its children. */
async function serverProcesses(dataDir: string): Promise<number[]> {
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
 * Another Node process that starts the embedded server the way HCP does, reports its connection string
 * and then idles until it is killed.
 */
async function startInChild(dataDir: string, port: number): Promise<{ child: ChildProcess; connectionString: string }> {
  const script = `
    const { startEmbeddedPostgres } = require(${JSON.stringify(MODULE_PATH)});
    startEmbeddedPostgres({ dataDir: process.env.EP_DATA_DIR, port: Number(process.env.EP_PORT) }).then(
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
    env: { ...process.env, EP_DATA_DIR: dataDir, EP_PORT: String(port), TS_NODE_PROJECT: path.join(REPO_ROOT, 'tsconfig.json') },
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

async function sigkill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

afterAll(async () => {
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
});

describe('startEmbeddedPostgres', () => {
  it('creates a cluster on first start and keeps its data across a stop and a start', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const first = await start(dataDir, port);

    expect(first.connectionString).toMatch(new RegExp(`^postgres://hcp:[^@]+@127\\.0\\.0\\.1:${port}/hcp$`));
    const credentials = await fs.stat(path.join(dataDir, 'postgres.credentials.json'));
    expect(credentials.mode & 0o777).toBe(0o600);
    const [listen] = await query<{ listen_addresses: string }>(first.connectionString, 'SHOW listen_addresses');
    expect(listen?.listen_addresses).toBe('127.0.0.1');

    await query(first.connectionString, 'CREATE TABLE vms (id text PRIMARY KEY, name text NOT NULL)');
    await query(first.connectionString, 'INSERT INTO vms VALUES ($1, $2)', ['vm-1', 'web-1']);
    await first.stop();
    expect(await serverProcesses(dataDir)).toEqual([]);
    await expect(query(first.connectionString, 'SELECT 1')).rejects.toThrow();

    const second = await start(dataDir, port);
    expect(second.connectionString).toBe(first.connectionString);
    expect(await query(second.connectionString, 'SELECT id, name FROM vms')).toEqual([{ id: 'vm-1', name: 'web-1' }]);
    await second.stop();
    await second.stop();
  });

  it('reuses the server a SIGKILLed process left running on the same port', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const { child, connectionString } = await startInChild(dataDir, port);
    await query(connectionString, 'CREATE TABLE jobs (id text PRIMARY KEY)');
    await query(connectionString, "INSERT INTO jobs VALUES ('job-1')");
    const leftover = await postmasterPid(dataDir);

    await sigkill(child);
    // The situation being handled: the server outlives the process that started it.
    expect(await serverProcesses(dataDir)).toContain(leftover);

    const rec = recorder();
    const server = await start(dataDir, port, rec);
    expect(rec.messages.join('\n')).toContain(`reusing the server left running on port ${port} (pid ${leftover})`);
    expect(server.connectionString).toBe(connectionString);
    expect(await query(server.connectionString, 'SELECT id FROM jobs')).toEqual([{ id: 'job-1' }]);

    await server.stop();
    expect(await serverProcesses(dataDir)).toEqual([]);
  });

  it('shuts down a leftover server that listens on another port and starts a new one', async () => {
    const dataDir = await tempDataDir();
    const oldPort = await freePort();
    const { child, connectionString } = await startInChild(dataDir, oldPort);
    await query(connectionString, 'CREATE TABLE jobs (id text PRIMARY KEY)');
    await query(connectionString, "INSERT INTO jobs VALUES ('job-2')");
    const leftover = await postmasterPid(dataDir);
    await sigkill(child);

    let newPort = await freePort();
    while (newPort === oldPort) newPort = await freePort();
    const rec = recorder();
    const server = await start(dataDir, newPort, rec);
    expect(rec.messages.join('\n')).toContain(`(pid ${leftover}, port ${oldPort}, ready) does not answer on port ${newPort}; shutting it down`);
    expect(await serverProcesses(dataDir)).not.toContain(leftover);
    expect(await postmasterPid(dataDir)).not.toBe(leftover);
    expect(await query(server.connectionString, 'SELECT id FROM jobs')).toEqual([{ id: 'job-2' }]);
    await expect(query(connectionString, 'SELECT 1')).rejects.toThrow();

    await server.stop();
  });

  it('removes a stale pid file without signalling the live process that now has that pid', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const first = await start(dataDir, port);
    await query(first.connectionString, 'CREATE TABLE t (v int)');
    await first.stop();

    // A pid reused by an unrelated process (this test runner itself): it must survive, the file must go.
    const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
    await fs.writeFile(pidFile, `${process.pid}\n${path.join(dataDir, 'postgres')}\n0\n${port}\n\n127.0.0.1\n0 0\nready   \n`);
    const rec = recorder();
    const second = await start(dataDir, port, rec);
    expect(rec.messages.join('\n')).toContain(`removing the stale ${pidFile} (pid ${process.pid} is no server of this cluster)`);
    expect(await query(second.connectionString, 'SELECT count(*)::int AS n FROM t')).toEqual([{ n: 0 }]);
    await second.stop();

    // A dead pid.
    const gone = spawn(process.execPath, ['-e', '']);
    const deadPid = gone.pid;
    await new Promise((resolve) => gone.once('exit', resolve));
    await fs.writeFile(pidFile, `${deadPid}\n${path.join(dataDir, 'postgres')}\n0\n${port}\n\n127.0.0.1\n0 0\nready   \n`);
    const third = await start(dataDir, port);
    expect(await query(third.connectionString, 'SELECT count(*)::int AS n FROM t')).toEqual([{ n: 0 }]);
    await third.stop();
  });

  it('says why when the server cannot start, here because its port is taken', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
    try {
      await expect(start(dataDir, port)).rejects.toThrow(/did not start[\s\S]*could not bind IPv4 address "127\.0\.0\.1": Address already in use/);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
    // Nothing was left behind, and the next attempt on a free port succeeds.
    expect(await serverProcesses(dataDir)).toEqual([]);
    await (await start(dataDir, await freePort())).stop();
  });

  it('refuses a cluster whose credentials file was lost rather than inventing a new password', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    await (await start(dataDir, port)).stop();
    await fs.rm(path.join(dataDir, 'postgres.credentials.json'));
    await expect(start(dataDir, port)).rejects.toThrow(/postgres\.credentials\.json is missing/);
  });
});
