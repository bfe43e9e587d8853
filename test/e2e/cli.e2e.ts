import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { ApiClient, eventually } from '../support/api-client';
import { freePort, HcpProcess } from '../support/hcp-process';
import { whileSimulatorHoldsVm } from '../support/simulator-hold';
import { createTestDatabase, TestDatabase } from '../support/test-database';

const ROOT = path.join(__dirname, '..', '..');
const run = promisify(execFile);
const ESC = String.fromCharCode(27);
const CLEAR_LINE = `${ESC}[2K`;

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `hcp` as users install it (packages/cli/README.md): `npm run build:cli`, then `npm link`, here into a
 * global prefix of this suite's own, and run as `hcp` from that prefix's bin against a real HCP, with a
 * config file of its own. build:cli writes only dist/packages/{cli,client}, which HCP never runs.
 */
describe('hcp CLI against a running HCP', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let api: ApiClient;
  let home: string;
  let binDir: string;
  let config: string;

  beforeAll(async () => {
    home = mkdtempSync(path.join(tmpdir(), 'hcp-cli-e2e-'));
    config = path.join(home, '.config', 'hcp', 'config.yaml');
    const npm = (...args: string[]) =>
      run('npm', args, { cwd: ROOT, env: { ...process.env, NPM_CONFIG_PREFIX: path.join(home, 'npm-global') } });
    const [, database] = await Promise.all([
      npm('run', '-s', 'build:cli').then(() => npm('link', '--no-audit', '--no-fund')),
      createTestDatabase(),
    ]);
    binDir = path.join(home, 'npm-global', 'bin');
    db = database;
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_SIMULATOR_LATENCY_SCALE: '0.5',
        HCP_SIMULATOR_FAULTS: 'reboot=fail:PROVIDER_UNAVAILABLE',
        HCP_JOB_MAX_ATTEMPTS: '2',
        HCP_JOB_RETRY_BACKOFF_MS: '50',
      },
    });
    api = new ApiClient(hcp.baseUrl, hcp.token('alice', { cli: 'admin' }));
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  /** Runs `hcp args...` from PATH; no terminal, so progress comes as plain lines. */
  function hcpCli(args: string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<CliResult> {
    return new Promise((resolve, reject) => {
      const child = spawn('hcp', args, {
        env: { PATH: `${binDir}:${process.env.PATH}`, HOME: home, ...options.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
      child.stdin.end(options.input ?? '');
    });
  }

  /** A dev token as `npm run token` prints it (the script people use), signed with this HCP's key. */
  async function npmRunToken(...args: string[]): Promise<string> {
    const { stdout } = await run(
      process.execPath,
      [path.join(ROOT, 'scripts/ts-run.js'), 'src/cli/token.ts', ...args],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: home, HCP_DATA_DIR: hcp.dataDir },
      },
    );
    return stdout.trim();
  }

  async function login(): Promise<void> {
    if (existsSync(config)) return;
    const token = await npmRunToken('--sub', 'alice', '--project', 'cli:admin');
    const res = await hcpCli(['login', '--url', hcp.baseUrl, '--token', '-'], { input: token });
    expect(res).toMatchObject({ code: 0 });
  }

  async function createdVm(name: string): Promise<string> {
    await login();
    const res = await hcpCli([
      'vms',
      'create',
      name,
      '--zone',
      'local',
      '--image',
      'debian-12',
      '--flavor',
      'small',
      '--wait',
      '-o',
      'json',
    ]);
    if (res.code !== 0) throw new Error(`hcp ${res.code}: ${res.stderr}`);
    return JSON.parse(res.stdout).resource_id;
  }

  it('is installed as `hcp` by npm link (package.json bin) and answers --version and --help with its exit codes', async () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(realpathSync(path.join(binDir, 'hcp'))).toBe(path.join(ROOT, pkg.bin.hcp));
    const version = await hcpCli(['--version']);
    expect(version).toMatchObject({ code: 0, stdout: '0.1.0\n' });
    const help = await hcpCli(['--help']);
    expect(help.code).toBe(0);
    for (const line of ['3  refused by HCP', '4  the job failed', '5  timed out waiting', '6  HCP unreachable'])
      expect(help.stdout).toContain(line);
    expect(await hcpCli(['vms', 'frobnicate'])).toMatchObject({ code: 2 });
    expect(await hcpCli(['vms', 'list', '--output', 'xml'])).toMatchObject({ code: 2 });
  });

  it('refuses to log in with a token HCP does not take (exit 3) and writes no config', async () => {
    const res = await hcpCli(['login', '--url', hcp.baseUrl, '--token', 'not-a-jwt']);
    expect(res.code).toBe(3);
    expect(res.stderr).toContain('UNAUTHORIZED');
    expect(existsSync(config)).toBe(false);
  });

  it('logs in with a token from standard input, keeping it in a 0600 config file in a 0700 folder', async () => {
    await login();
    expect(statSync(config).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(config)).mode & 0o777).toBe(0o700);
    const saved = parse(readFileSync(config, 'utf8'));
    expect(saved.current_context).toBe('default');
    // The token names one project: it becomes the context's project.
    expect(saved.contexts.default).toMatchObject({ url: hcp.baseUrl, project: 'cli' });
    expect(saved.contexts.default.token.split('.')).toHaveLength(3);
  });

  it('creates a VM with --wait: plain progress lines off a terminal, exit 0, and the VM is running', async () => {
    await login();
    const res = await hcpCli([
      'vms',
      'create',
      'web-1',
      '--image',
      'debian-12',
      '--flavor',
      'small',
      '--wait',
      '-o',
      'json',
    ]);
    expect(res.code).toBe(0);
    const job = JSON.parse(res.stdout);
    expect(job).toMatchObject({ type: 'vm.create', status: 'succeeded', attempts: 1 });
    expect(res.stderr).not.toContain(ESC);
    expect(res.stderr).not.toContain('\r');
    const lines = res.stderr.trim().split('\n');
    expect(lines[0]).toBe(`waiting for job ${job.id}`);
    expect(lines).toContain(lines.find((l) => /^attempt 1 started \(\d+\.\ds\)$/.test(l)));
    expect(lines.at(-1)).toMatch(
      new RegExp(`^✔ vm\\.create succeeded in \\d+\\.\\ds — vm ${job.resource_id} running$`),
    );
    const vm = (await api.get(`/v1/projects/cli/vms/${job.resource_id}`)).body;
    expect(vm).toMatchObject({ name: 'web-1', status: 'running' });
  });

  it('lists and gets VMs as a table, JSON and YAML that parse', async () => {
    const id = await createdVm('list-1');
    const table = await hcpCli(['vms', 'list']);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+ZONE\s+STATUS\s+DESIRED\s+ADDRESSES\s+CREATED$/);
    expect(table.stdout).toMatch(new RegExp(`^${id}\\s+list-1\\s+local\\s+running\\s+running`, 'm'));
    const json = JSON.parse((await hcpCli(['vms', 'list', '-o', 'json'])).stdout);
    expect(json.map((v: { id: string }) => v.id)).toContain(id);
    const yaml = parse((await hcpCli(['vms', 'get', 'list-1', '-o', 'yaml'])).stdout);
    expect(yaml).toMatchObject({ id, name: 'list-1', status: 'running', project_id: 'cli' });
    const job = parse((await hcpCli(['jobs', 'get', yaml.last_job_id, '-o', 'yaml'])).stdout);
    expect(job).toMatchObject({ id: yaml.last_job_id, status: 'succeeded' });
  });

  it('follows every page of a list, with the address and token from the environment alone', async () => {
    const token = hcp.token('paula', { pages: 'admin' });
    const pagesApi = new ApiClient(hcp.baseUrl, token);
    for (let i = 0; i < 3; i++)
      expect(
        (await pagesApi.post('/v1/projects/pages/vms', { name: `p-${i}`, zone: 'local', ...(await choice()) })).status,
      ).toBe(202);
    const env = {
      HCP_URL: hcp.baseUrl,
      HCP_TOKEN: token,
      HCP_PROJECT: 'pages',
      HCP_CONFIG: path.join(home, 'none.yaml'),
    };
    const res = await hcpCli(['vms', 'list', '--page-size', '2', '-o', 'json'], { env });
    expect(res.code).toBe(0);
    expect(
      JSON.parse(res.stdout)
        .map((v: { name: string }) => v.name)
        .sort(),
    ).toEqual(['p-0', 'p-1', 'p-2']);
  });

  it('exits 3 when HCP refuses the create (a viewer may not create), saying why', async () => {
    await login();
    const viewer = hcp.token('victor', { cli: 'viewer' });
    const res = await hcpCli(['vms', 'create', 'nope', '--image', 'debian-12', '--flavor', 'small', '--wait'], {
      env: { HCP_TOKEN: viewer },
    });
    expect(res.code).toBe(3);
    expect(res.stderr).toMatch(/^error: FORBIDDEN: /m);
  });

  it('exits 4 when the job fails, with a final line giving its attempts and error', async () => {
    const id = await createdVm('flaky-1');
    const res = await hcpCli(['vms', 'reboot', id, '--wait']);
    expect(res.code).toBe(4);
    expect(res.stderr.trim().split('\n').at(-1)).toMatch(
      new RegExp(`^✖ vm\\.reboot failed after 2 attempts in \\d+\\.\\ds: PROVIDER_UNAVAILABLE .* — vm ${id}( \\w+)?$`),
    );
  });

  it('exits 5 when the job is still running at --timeout, and says the job goes on', async () => {
    const id = await createdVm('slow-1');
    // The simulator cannot stop this VM while the test holds its row: the job stays unfinished.
    const res = await whileSimulatorHoldsVm(db.url, id, () => hcpCli(['vms', 'stop', id, '--wait', '--timeout', '2s']));
    expect(res.code).toBe(5);
    expect(res.stderr.trim().split('\n').at(-1)).toMatch(
      // The hold also keeps the job list from showing the job yet: it may be named by its id alone.
      /^✖ timed out after \d+\.\ds waiting for (vm\.stop \((queued|running)\)|job [0-9a-f-]+); it goes on in HCP: hcp jobs watch [0-9a-f-]+$/,
    );
    const jobId = /hcp jobs watch ([0-9a-f-]+)$/.exec(res.stderr.trim())![1];
    // Released, the stop finishes, and `jobs watch` follows it to the end.
    const watched = await hcpCli(['jobs', 'watch', jobId, '-o', 'json']);
    expect(watched.code).toBe(0);
    expect(JSON.parse(watched.stdout)).toMatchObject({ id: jobId, type: 'vm.stop', status: 'succeeded' });
  });

  it('stops watching on Ctrl-C with exit 130, saying how to follow the job that goes on', async () => {
    const id = await createdVm('interrupted-1');
    const res = await whileSimulatorHoldsVm(db.url, id, async () => {
      const child = spawn('hcp', ['vms', 'stop', id, '--wait'], {
        env: { PATH: `${binDir}:${process.env.PATH}`, HOME: home },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (d: string) => (stderr += d));
      const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
      await eventually(async () => (stderr.includes('waiting for job') ? true : undefined), 'the wait to start');
      child.kill('SIGINT');
      return { code: await exited, stderr };
    });
    expect(res.code).toBe(130);
    expect(res.stderr.trim().split('\n').at(-1)).toMatch(
      /^■ stopped watching .* after \d+\.\ds; it goes on in HCP: hcp jobs watch [0-9a-f-]+$/,
    );
  });

  it('exits 3 at once when asked to watch a job HCP does not have', async () => {
    await login();
    const res = await hcpCli(['jobs', 'watch', '00000000-0000-4000-8000-000000000000']);
    expect(res.code).toBe(3);
    expect(res.stderr).toMatch(/^error: NOT_FOUND: /m);
  });

  it('exits 6 when HCP cannot be reached', async () => {
    const port = await freePort();
    const res = await hcpCli(['vms', 'list', '--project', 'cli'], {
      env: { HCP_URL: `http://127.0.0.1:${port}`, HCP_TOKEN: 'whatever' },
    });
    expect(res.code).toBe(6);
    expect(res.stderr).toMatch(/^error: HCP unreachable: .*ECONNREFUSED/m);
  });

  it('sends the same Idempotency-Key again with --idempotency-key: the second run gets the first answer, no second VM', async () => {
    await login();
    const args = ['vms', 'create', 'once-1', '--image', 'debian-12', '--flavor', 'small', '-o', 'json'];
    const first = await hcpCli([...args, '--idempotency-key', 'script-run-42']);
    const second = await hcpCli([...args, '--idempotency-key', 'script-run-42']);
    expect(first.code).toBe(0);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual(JSON.parse(first.stdout));
    expect(JSON.parse(first.stdout).idempotency_key).toBe('script-run-42');
    const named = JSON.parse((await hcpCli(['vms', 'list', '--name', 'once-1', '-o', 'json'])).stdout);
    expect(named).toHaveLength(1);
    // Without a key each run is a new request.
    const third = await hcpCli(args);
    expect(JSON.parse(third.stdout).resource_id).not.toBe(JSON.parse(first.stdout).resource_id);
  });

  it('keeps several contexts: --context picks one, use switches, delete forgets it', async () => {
    await login();
    const other = hcp.token('olga', { second: 'viewer' });
    expect(await hcpCli(['login', '--url', hcp.baseUrl, '--token', other, '--name', 'second'])).toMatchObject({
      code: 0,
    });
    const list = await hcpCli(['context', 'list']);
    expect(list.stdout).toMatch(/^\*\s+second\s+http:\/\/127\.0\.0\.1:\d+\s+second$/m);
    expect(list.stdout).toMatch(/^\s+default\s+http:\/\/127\.0\.0\.1:\d+\s+cli$/m);
    // The current context is "second" now; --context reaches the other one.
    expect(JSON.parse((await hcpCli(['vms', 'list', '-o', 'json'])).stdout)).toEqual([]);
    const viaFlag = JSON.parse((await hcpCli(['--context', 'default', 'vms', 'list', '-o', 'json'])).stdout);
    expect(viaFlag.length).toBeGreaterThan(0);
    expect(await hcpCli(['context', 'use', 'default'])).toMatchObject({ code: 0 });
    expect(await hcpCli(['context', 'delete', 'second'])).toMatchObject({ code: 0 });
    expect(Object.keys(parse(readFileSync(config, 'utf8')).contexts)).toEqual(['default']);
    expect(await hcpCli(['--context', 'second', 'vms', 'list'])).toMatchObject({ code: 2 });
    expect(statSync(config).mode & 0o777).toBe(0o600);
  });

  it('runs the ops commands: catalog, quotas, providers, clusters, zones, hosts, audit, projections', async () => {
    await login();
    const ops = {
      HCP_TOKEN: hcp.token('anna', {}, ['infra-admin', 'cloud-operator', 'security-auditor']),
      HCP_PROJECT: 'cli',
    };
    const json = async (args: string[], input?: string) => {
      const res = await hcpCli([...args, '-o', 'json'], { env: ops, input });
      expect({ args, code: res.code, stderr: res.stderr }).toMatchObject({ code: 0 });
      return JSON.parse(res.stdout);
    };
    const provider = await json(['providers', 'create', '-f', '-'], 'name: lab\ntype: simulator\n');
    expect(provider).toMatchObject({ name: 'lab', type: 'simulator' });
    const cluster = await json(
      ['clusters', 'create', '-f', '-'],
      JSON.stringify({
        name: 'lab-1',
        provider_id: provider.id,
        capacity: { vcpus: 64, ram_mb: 262144, disk_gb: 4000 },
      }),
    );
    const zone = await json(
      ['zones', 'create', '-f', '-'],
      `id: lab\nname: Lab\ncluster_ids: [${cluster.id}]\npolicy: pack\n`,
    );
    expect(zone).toMatchObject({ id: 'lab', cluster_ids: [cluster.id], policy: 'pack' });
    expect((await json(['zones', 'list', '--ops'])).map((z: { id: string }) => z.id)).toContain('lab');
    expect((await json(['providers', 'list'])).map((p: { id: string }) => p.id)).toContain(provider.id);
    expect((await json(['clusters', 'list'])).map((c: { id: string }) => c.id)).toContain(cluster.id);
    const flavor = await json(['flavors', 'create', '-f', '-'], 'name: tiny\nvcpus: 1\nram_mb: 512\ndisk_gb: 5\n');
    expect((await json(['flavors', 'list', '--ops'])).map((f: { id: string }) => f.id)).toContain(flavor.id);
    const quotas = await json([
      'quotas',
      'set',
      '--instances',
      '50',
      '--vcpus',
      '100',
      '--ram-mb',
      '409600',
      '--disk-gb',
      '5000',
    ]);
    expect(quotas).toMatchObject({ project_id: 'cli', limits: { instances: 50 } });
    expect(await json(['hosts', 'list'])).toEqual([]);
    // The audit trail is a projection: anna's requests reach it shortly after.
    const audit = await eventually(async () => {
      const records = await json(['audit', 'replay', '--actor', 'anna']);
      return records.length > 0 ? records : undefined;
    }, "anna's audit records");
    expect(new Set(audit.map((a: { actor: string }) => a.actor))).toEqual(new Set(['anna']));
    const projections = await json(['projections', 'list']);
    expect(projections.map((p: { name: string }) => p.name)).toContain('vm-read-model');
    const rebuilt = await json(['projections', 'rebuild', 'vm-read-model', '--wait']);
    expect(rebuilt).toMatchObject({ name: 'vm-read-model', rebuilding: false });
    // A tenant sees the catalog, and the zone listing with its capabilities.
    const tenantZones = JSON.parse((await hcpCli(['zones', 'list', '-o', 'json'])).stdout);
    expect(tenantZones.map((z: { id: string }) => z.id)).toEqual(expect.arrayContaining(['local', 'lab']));
  });

  it("reports a project's usage of a period (JSON, YAML, a table with a total line); a reversed period exits 3", async () => {
    await createdVm('billed-1');
    const env = { HCP_TOKEN: hcp.token('otto', {}, ['cloud-operator']) };
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const to = new Date(Date.now() + 3_600_000).toISOString();
    const period = ['--from', from, '--to', to];
    // Usage comes from the metering projection: the VMs reach it shortly after their jobs.
    const report = await eventually(async () => {
      const res = await hcpCli(['usage', '-p', 'cli', ...period, '--per-vm', '-o', 'json'], { env });
      expect(res.code).toBe(0);
      const body = JSON.parse(res.stdout);
      return body.totals.vms > 0 ? body : undefined;
    }, 'usage with VMs');
    expect(report).toMatchObject({ project: 'cli', from, to });
    expect(report.vms.length).toBe(report.totals.vms);
    expect(parse((await hcpCli(['usage', '-p', 'cli', ...period, '-o', 'yaml'], { env })).stdout).project).toBe('cli');
    const table = await hcpCli(['usage', '-p', 'cli', ...period], { env });
    expect(table.stdout.split('\n')[0]).toMatch(
      /^PROJECT\s+ZONE\s+FLAVOR\s+VMS\s+VM HOURS\s+VCPU HOURS\s+GIB HOURS\s+OFF HOURS$/,
    );
    expect(table.stdout).toMatch(/^total\s/m);
    const reversed = await hcpCli(['usage', '-p', 'cli', '--from', to, '--to', from], { env });
    expect(reversed.code).toBe(3);
    expect(reversed.stderr).toMatch(/^error: INVALID_REQUEST: /m);
  });

  it('shows live progress in a terminal: a status line redrawn in place, steps above it, a final line', async () => {
    await login();
    const child = spawn(
      'script',
      [
        '-qefc',
        'stty cols 120 rows 30; exec hcp vms create tty-1 --zone local --image debian-12 --flavor small --wait',
        '/dev/null',
      ],
      { env: { PATH: `${binDir}:${process.env.PATH}`, HOME: home, TERM: 'xterm' }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let raw = '';
    child.stdout.setEncoding('utf8');
    // As text decoded across chunks: a spinner character may be split between two reads.
    child.stdout.on('data', (d: string) => (raw += d));
    const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
    // While the job runs, the terminal shows the status line (spinner, job type, status, elapsed).
    await eventually(
      async () => (/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] vm\.create \w+ · .*\d+\.\ds/.test(raw) ? true : undefined),
      'a status line',
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the terminal showed:\n${raw}`);
    });
    expect(await exited).toBe(0);
    const frames = raw.split(`\r${CLEAR_LINE}`).filter((f) => /^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] /.test(f));
    expect(new Set(frames).size).toBeGreaterThan(1);
    const screen = renderTerminal(raw);
    // Every status line was overwritten: what is left on screen is the steps and the final line.
    expect(screen.filter((l) => /^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/.test(l))).toEqual([]);
    expect(screen.some((l) => /^ {2}· attempt 1 started \(\d+\.\ds\)$/.test(l))).toBe(true);
    expect(
      screen.some((l) => /^ {2}· vm provisioning → running \(\d+\.\ds\)$/.test(l) || /^ {2}· vm running/.test(l)),
    ).toBe(true);
    expect(screen.at(-1)).toMatch(/^✔ vm\.create succeeded in \d+\.\ds — vm [0-9a-f-]{36} running$/);
  });

  async function choice() {
    const images = (await api.get('/v1/images')).body.items as Array<{ id: string; name: string }>;
    const flavors = (await api.get('/v1/flavors')).body.items as Array<{ id: string; name: string }>;
    return {
      image_id: images.find((i) => i.name === 'debian-12')!.id,
      flavor_id: flavors.find((f) => f.name === 'small')!.id,
    };
  }
});

/**
 * The lines a terminal would show after this output: \r returns to the line's start, ESC[2K clears
 * the line, \n goes to the next one; other escape sequences are dropped. Trailing blank lines trimmed.
 */
function renderTerminal(raw: string): string[] {
  const lines: string[][] = [[]];
  let col = 0;
  const text = raw
    .split(CLEAR_LINE)
    .join('\u0000')
    .replace(new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]`, 'g'), '');
  for (const ch of text) {
    const line = lines[lines.length - 1];
    if (ch === '\r') col = 0;
    else if (ch === '\n') {
      lines.push([]);
      col = 0;
    } else if (ch === '\u0000') line.length = 0;
    else line[col++] = ch;
  }
  const out = lines.map((l) =>
    Array.from(l, (c) => c ?? ' ')
      .join('')
      .trimEnd(),
  );
  while (out.length && out[out.length - 1] === '') out.pop();
  return out;
}
