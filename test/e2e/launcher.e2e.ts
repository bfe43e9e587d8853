import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadOrCreateDevSigningKey, signDevToken } from '@hcp/auth';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { freePort } from '../support/hcp-process';

const ROOT = path.join(__dirname, '..', '..');

/**
 * `npm start` without HCP_ROLES: the launcher runs two API processes on one port and one for the worker
 * and projections, on the PostgreSQL of a fresh data folder. Connections land on both API processes, a
 * create runs to done, an API process killed hard comes back while the other keeps serving, and SIGTERM
 * stops everything with exit 0, leaving the data folder reusable.
 */
describe('npm start uses the machine', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hcp-launcher-e2e-'));
  let launcher: ChildProcess | null = null;
  let output = '';

  afterAll(async () => {
    if (launcher && launcher.exitCode === null && launcher.signalCode === null) {
      const exited = new Promise((resolve) => launcher?.once('exit', resolve));
      launcher.kill('SIGKILL');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves from several API processes, restarts a killed one and stops cleanly', async () => {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    launcher = spawn(process.execPath, [path.join(ROOT, 'scripts/ts-run.js'), 'src/launcher/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        PORT: String(port),
        HOST: '127.0.0.1',
        HCP_DATA_DIR: dataDir,
        HCP_API_PROCESSES: '2',
        LOG_LEVEL: 'warn',
        HCP_WORKER_POLL_MS: '100',
        HCP_SIMULATOR_LATENCY_SCALE: '0.05',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    launcher.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    launcher.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      launcher?.once('exit', (code, signal) => resolve({ code, signal })),
    );

    const apiPids = await eventually(
      async () => {
        const pids = startedPids(output, /api-\d+/);
        return pids.length === 2 && output.includes('HCP listening on') ? pids : undefined;
      },
      `both API processes listening:\n${output}`,
      180_000,
    );

    // Connections are spread over the API processes: each holds some of ten kept open.
    const agent = new Agent({ keepAlive: true, maxSockets: 10 });
    await Promise.all(Array.from({ length: 10 }, () => get(`${baseUrl}/health/ready`, agent)));
    const holders = apiPids.map((pid) => establishedConnections(pid, port));
    agent.destroy();
    expect(holders.every((n) => n > 0)).toBe(true);

    const key = loadOrCreateDevSigningKey(dataDir);
    const token = signDevToken(key, {
      sub: 'alice',
      projects: { demo: 'admin' },
      opsRoles: [],
      issuer: 'hcp-dev',
      audience: 'hcp',
      ttlSeconds: 600,
    });
    const api = new ApiClient(baseUrl, token);
    const created = await api.post('/v1/projects/demo/vms', {
      name: 'spread',
      zone: 'local',
      ...(await seededChoice(api)),
    });
    expect(created.status).toBe(202);
    expect((await jobFinished(api, 'demo', created.body.job_id, 60_000)).status).toBe('succeeded');

    process.kill(apiPids[0], 'SIGKILL');
    const exitLine = new RegExp(`api-1 \\(pid ${apiPids[0]}\\) exited with signal SIGKILL: restarting`);
    await eventually(async () => exitLine.test(output) || undefined, `the launcher saw api-1 die:\n${output}`);
    // Connections the killed process held were reset; every new one is answered by the other meanwhile
    // (each request below opens a connection of its own), and the killed one is started again.
    const vmPath = `/v1/projects/demo/vms/${created.body.resource_id}`;
    const fresh = await getOnNewConnection(`${baseUrl}${vmPath}`, token);
    expect(fresh.status).toBe(200);
    expect(JSON.parse(fresh.body).status).toBe('running');
    const restarted = await eventually(
      async () => {
        const pids = startedPids(output, /api-\d+/).filter((p) => !apiPids.includes(p));
        return pids.length === 1 && isAlive(pids[0]) ? pids[0] : undefined;
      },
      `the killed API process started again:\n${output}`,
      60_000,
    );
    for (let i = 0; i < 10; i++) expect((await getOnNewConnection(`${baseUrl}/v1/zones`, token)).status).toBe(200);

    launcher.kill('SIGTERM');
    expect(await exit).toEqual({ code: 0, signal: null });
    const children = [...apiPids.slice(1), restarted, ...startedPids(output, /worker\+projections/)];
    expect(children.filter(isAlive)).toEqual([]);
    // The embedded PostgreSQL was stopped: a clean shutdown removes its pid file.
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  }, 300_000);
});

describe('npm start whose children cannot start', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hcp-launcher-e2e-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('gives up with exit 1 and stops the embedded PostgreSQL', async () => {
    // A setting only the children validate: each exits 2 (configuration), which no restart can mend.
    const launcher = spawn(process.execPath, [path.join(ROOT, 'scripts/ts-run.js'), 'src/launcher/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        HCP_DATA_DIR: dataDir,
        HCP_API_PROCESSES: '1',
        HCP_SIMULATOR_FAULTS: 'not a fault',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    launcher.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    launcher.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise((resolve) => launcher.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(output).toContain('worker+projections exited with code 2 before it started');
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  }, 180_000);
});

/** The pids the launcher logged as started for children whose name matches. */
function startedPids(log: string, name: RegExp): number[] {
  const pattern = new RegExp(`(${name.source}) started \\(pid (\\d+)\\)`, 'g');
  return [...log.matchAll(pattern)].map((m) => Number(m[2]));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A GET on a connection of its own (no keep-alive pool that could hold one to a killed process). */
function getOnNewConnection(url: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function get(url: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Established TCP connections on `port` whose server side this process holds (from /proc). */
function establishedConnections(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const match = /^socket:\[(\d+)\]$/.exec(target);
      if (match) inodes.add(match[1]);
    } catch {
      // closed meanwhile
    }
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f.length > 9 && f[1].endsWith(`:${hexPort}`) && f[3] === '01' && inodes.has(f[9])).length;
}
