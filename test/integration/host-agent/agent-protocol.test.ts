import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HcpError } from '@hcp/domain';
import type { ClaimedHostCall } from '@hcp/host-protocol';
import type { AgentLog } from '../../../src/host-agent/agent-log';
import { credentialPathOf, writeCredential } from '../../../src/host-agent/credential-file';
import { EXIT_CODES } from '../../../src/host-agent/exit-codes';
import { runAgent } from '../../../src/host-agent/run-agent';
import { HostDriverDouble, running } from './host-driver-double';
import { ScriptedHcp } from './scripted-hcp';

/** The agent's real code (runAgent: enrollment, loops, runner) against a scripted HCP and a driver double. */
interface RunningAgent {
  exit: Promise<number>;
  lines: string[];
  stop(): void;
}

function startAgent(args: string[], driver: HostDriverDouble, env: NodeJS.ProcessEnv = {}): RunningAgent {
  const lines: string[] = [];
  const log: AgentLog = {
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
  };
  const stopper = new AbortController();
  const exit = runAgent(args, env, { log, driverFor: () => driver, stop: stopper.signal, readStdin: async () => '' });
  return { exit, lines, stop: () => stopper.abort() };
}

/** Waits for a condition the agent brings about; jest's test timeout bounds it. */
async function eventually(what: string, condition: () => boolean, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const logged = (agent: RunningAgent, pattern: RegExp) => agent.lines.some((line) => pattern.test(line));

let nextCall = 0;
function call(request: unknown, options: { lease_ms?: number; deadlineInMs?: number } = {}): ClaimedHostCall {
  nextCall += 1;
  return {
    call_id: `call-${nextCall}`,
    request: request as ClaimedHostCall['request'],
    deadline: new Date(Date.now() + (options.deadlineInMs ?? 120_000)).toISOString(),
    lease_ms: options.lease_ms ?? 30_000,
    reclaimed: false,
  };
}

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('host agent against the internal protocol', () => {
  let hcp: ScriptedHcp;
  let stateDir: string;
  let driver: HostDriverDouble;
  const agents: RunningAgent[] = [];

  const args = (...extra: string[]) => [
    '--hcp',
    hcp.url,
    '--state-dir',
    stateDir,
    '--identity',
    'machine-1',
    '--heartbeat-interval-ms',
    '200',
    '--shutdown-grace-ms',
    '10000',
    ...extra,
  ];
  const start = (...extra: string[]) => {
    const agent = startAgent(args(...extra), driver);
    agents.push(agent);
    return agent;
  };
  const enrolled = () =>
    writeCredential(stateDir, { host_id: 'host-1', cluster_id: 'cluster-1', credential: hcp.credential, hcp: hcp.url });

  beforeEach(async () => {
    hcp = new ScriptedHcp();
    await hcp.start();
    stateDir = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'hcp-agent-')), 'state');
    driver = new HostDriverDouble();
  });

  afterEach(async () => {
    for (const agent of agents.splice(0)) {
      agent.stop();
      await agent.exit;
    }
    await hcp.stop();
    await fs.rm(path.dirname(stateDir), { recursive: true, force: true });
  });

  it('enrolls once, keeps the credential private, and reuses it after a restart without the token', async () => {
    const first = start('--token', 'hcpb_good');
    await eventually('the first agent is ready', () => logged(first, /ready: host host-1/));
    expect(logged(first, /enrolled as host host-1 in cluster cluster-1 \(identity machine-1\)/)).toBe(true);
    expect(hcp.enrollments).toEqual([
      expect.objectContaining({ token: 'hcpb_good', identity: 'machine-1', hostname: os.hostname() }),
    ]);
    expect(hcp.heartbeats[0]).toEqual(
      expect.objectContaining({
        capacity: { vcpus: 8, ram_mb: 16_384, free_ram_mb: 12_000 },
        driver: 'libvirt',
        capabilities: driver.capabilities(),
        guests: 1,
      }),
    );
    first.stop();
    await expect(first.exit).resolves.toBe(EXIT_CODES.ok);
    expect((await fs.stat(credentialPathOf(stateDir))).mode & 0o777).toBe(0o600);
    expect((await fs.stat(stateDir)).mode & 0o777).toBe(0o700);

    const beatsBefore = hcp.heartbeats.length;
    const second = start('--token', 'hcpb_good');
    await eventually('the restarted agent heartbeats', () => hcp.heartbeats.length > beatsBefore);
    expect(logged(second, /already enrolled .*the bootstrap token was not needed and was not used/)).toBe(true);
    expect(hcp.enrollments).toHaveLength(1);
  });

  it('refuses to start with a credential file others can read, saying why', async () => {
    await enrolled();
    await fs.chmod(credentialPathOf(stateDir), 0o644);
    const agent = start();
    await expect(agent.exit).resolves.toBe(EXIT_CODES.credentialFile);
    expect(logged(agent, /refusing to start: .*credential.json has mode 644: group or others may read it/)).toBe(true);
    expect(hcp.heartbeats).toHaveLength(0);
  });

  it.each([
    [
      { status: 401, body: { error: { code: 'UNAUTHORIZED', message: 'bootstrap token expired' } } },
      /refused the bootstrap token \(401: bootstrap token expired\)/,
    ],
    [
      { status: 409, body: { error: { code: 'CONFLICT', message: 'token enrolled another identity' } } },
      /already enrolled another host \(409: token enrolled another identity\)/,
    ],
  ])('exits "cannot enroll" with HCP’s reason when enrollment is refused (%#)', async (answer, message) => {
    hcp.enrollAnswers.push(answer);
    const agent = start('--token', 'hcpb_good');
    await expect(agent.exit).resolves.toBe(EXIT_CODES.cannotEnroll);
    expect(agent.lines.filter((l) => l.startsWith('error'))).toEqual([expect.stringMatching(message)]);
    await expect(fs.stat(credentialPathOf(stateDir))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('exits "cannot enroll" naming a wrong URL and an unreachable HCP, and "bad arguments" without a token', async () => {
    const wrongUrl = startAgent(['--hcp', `${hcp.url}/not-hcp`, '--state-dir', stateDir, '--token', 't'], driver);
    await expect(wrongUrl.exit).resolves.toBe(EXIT_CODES.cannotEnroll);
    expect(logged(wrongUrl, /not-hcp\/internal\/v1\/enroll is not HCP's internal router \(404\)/)).toBe(true);

    const url = hcp.url;
    await hcp.stop();
    const unreachable = startAgent(['--hcp', url, '--state-dir', stateDir, '--token', 't'], driver);
    await expect(unreachable.exit).resolves.toBe(EXIT_CODES.cannotEnroll);
    expect(logged(unreachable, new RegExp(`HCP at ${url} is unreachable \\(ECONNREFUSED`))).toBe(true);

    const noToken = startAgent(['--hcp', url, '--state-dir', stateDir], driver);
    await expect(noToken.exit).resolves.toBe(EXIT_CODES.badArguments);
    expect(logged(noToken, /not enrolled yet .* no bootstrap token was given/)).toBe(true);
  });

  it('renews a running call at a third of its lease, so a call longer than its lease keeps it', async () => {
    await enrolled();
    const released = deferred();
    driver.answer('startVm', async () => {
      await released.promise;
      return running('vm-long');
    });
    const agent = start();
    const long = call({ op: 'start', hcp_id: 'vm-long' }, { lease_ms: 1_500 });
    hcp.offer(long);
    // Four renewals span more than one lease: the call outlives its first lease only by renewing it.
    await eventually('four renewals', () => hcp.renewals.filter((r) => r.call_id === long.call_id).length >= 4);
    released.resolve();
    await eventually('the outcome', () => hcp.outcomeAttempts.some((o) => o.call_id === long.call_id));
    expect(hcp.outcomesOf(long.call_id)).toEqual([
      expect.objectContaining({ outcome: { status: 'succeeded', value: running('vm-long') } }),
    ]);
    const [started] = driver.callsOf('startVm');
    expect(started.ctx.deadline.toISOString()).toBe(long.deadline);
    expect(started.ctx.signal.aborted).toBe(false);
    expect(agent.lines.filter((l) => l.startsWith('warn') || l.startsWith('error'))).toEqual([]);
  });

  it('reports what the driver answered, or its failure in the taxonomy', async () => {
    await enrolled();
    driver
      .answer('stopVm', async () => {
        throw new HcpError('PROVIDER_TIMEOUT', 'the guest did not shut down in time');
      })
      .answer('rebootVm', async () => {
        throw new Error('virsh: segfault with a secret path in it');
      });
    const agent = start();
    const created = call({
      op: 'create',
      spec: {
        hcp_id: 'vm-new',
        project_id: 'p',
        name: 'web',
        image_ref: 'base.qcow2',
        vcpus: 1,
        ram_mb: 128,
        disk_gb: 1,
        ssh_keys: [],
        tags: {},
        power_on: true,
      },
    });
    const stopped = call({ op: 'stop', hcp_id: 'vm-new', force: false });
    const rebooted = call({ op: 'reboot', hcp_id: 'vm-new', force: true });
    const deleted = call({ op: 'delete', hcp_id: 'vm-new' });
    const consoled = call({ op: 'console', hcp_id: 'vm-new', type: 'vnc' });
    for (const c of [created, stopped, rebooted, deleted, consoled]) hcp.offer(c);
    await eventually('five outcomes', () => hcp.outcomeAttempts.length >= 5);
    const outcomeOf = (c: ClaimedHostCall) => hcp.outcomesOf(c.call_id).map((o) => o.outcome);
    expect(outcomeOf(created)).toEqual([{ status: 'succeeded', value: running('vm-new') }]);
    expect(outcomeOf(stopped)).toEqual([
      {
        status: 'failed',
        error: { code: 'PROVIDER_TIMEOUT', message: 'the guest did not shut down in time', retryable: true },
      },
    ]);
    expect(outcomeOf(rebooted)).toEqual([
      { status: 'failed', error: { code: 'INTERNAL_ERROR', message: 'internal error', retryable: false } },
    ]);
    expect(outcomeOf(deleted)).toEqual([{ status: 'succeeded', value: null }]);
    expect(outcomeOf(consoled)).toEqual([
      { status: 'succeeded', value: { host: '127.0.0.1', port: 5901, password: 'once' } },
    ]);
    // The driver's own words stay on the host, in its log.
    expect(logged(agent, /reboot vm-new\) failed in the driver: virsh: segfault/)).toBe(true);
  });

  it('aborts a call whose renewal says the lease is gone, and reports nothing for it', async () => {
    await enrolled();
    const aborted = deferred<unknown>();
    driver.answer('startVm', (_args, ctx) => {
      ctx.signal.addEventListener('abort', () => aborted.resolve(ctx.signal.reason));
      return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
    });
    const agent = start();
    const taken = call({ op: 'start', hcp_id: 'vm-taken' }, { lease_ms: 600 });
    hcp.offer(taken);
    await eventually('the call runs', () => driver.callsOf('startVm').length === 1);
    hcp.held.get(taken.call_id)!.lost = true;
    await expect(aborted.promise).resolves.toMatchObject({ code: 'CONFLICT' });
    await eventually('the agent drops the call', () =>
      logged(agent, /call-\d+ \(start vm-taken\): HCP gave the call to another claim/),
    );
    expect(hcp.outcomeAttempts).toEqual([]);
    expect(driver.callsOf('startVm')).toHaveLength(1);
  });

  it('drops an outcome HCP answers 409 to, without trying again', async () => {
    await enrolled();
    hcp.outcomeAnswers.push({ status: 409, body: { error: { code: 'CONFLICT', message: 'not yours' } } });
    const agent = start();
    const late = call({ op: 'describe', hcp_id: 'vm-1' });
    hcp.offer(late);
    await eventually('the agent drops the outcome', () =>
      logged(agent, /no longer holds the call for this host \(409\); outcome dropped/),
    );
    const next = call({ op: 'check' });
    hcp.offer(next);
    await eventually('the next call is reported', () => hcp.outcomesOf(next.call_id).length === 1);
    expect(hcp.outcomeAttempts.filter((o) => o.call_id === late.call_id)).toHaveLength(1);
    expect(driver.callsOf('describeVm')).toHaveLength(1);
  });

  it('reports a plain failure when HCP refuses an outcome as invalid, so the call does not hang until its deadline', async () => {
    await enrolled();
    hcp.outcomeAnswers.push({ status: 400, body: { error: { code: 'INVALID_REQUEST', message: 'value too large' } } });
    const agent = start();
    const described = call({ op: 'describe', hcp_id: 'vm-1' });
    hcp.offer(described);
    await eventually('the second report', () => hcp.outcomesOf(described.call_id).length === 1);
    expect(hcp.outcomeAttempts.map((o) => [o.answered, o.outcome.status])).toEqual([
      [400, 'succeeded'],
      [204, 'failed'],
    ]);
    expect(hcp.outcomesOf(described.call_id)[0].outcome).toEqual({
      status: 'failed',
      error: { code: 'INTERNAL_ERROR', message: 'HCP refused the host agent’s outcome', retryable: false },
    });
    expect(logged(agent, /HCP refused its outcome \(HCP answered 400 INVALID_REQUEST .*value too large\)/)).toBe(true);
  });

  it('keeps reporting an outcome through an HCP outage until HCP has it, and claims again after', async () => {
    await enrolled();
    const released = deferred();
    driver.answer('startVm', async () => {
      await released.promise;
      return running('vm-1');
    });
    const agent = start();
    const during = call({ op: 'start', hcp_id: 'vm-1' }, { lease_ms: 120_000 });
    hcp.offer(during);
    await eventually('the call runs', () => driver.callsOf('startVm').length === 1);
    await hcp.stop();
    released.resolve();
    await eventually(
      'two failed reports',
      () => agent.lines.filter((l) => /reporting the outcome of call/.test(l)).length >= 2,
    );
    expect(logged(agent, /claiming calls failed: HCP at .* is unreachable/)).toBe(true);
    await hcp.start();
    await eventually('the outcome gets through', () => hcp.outcomesOf(during.call_id).length === 1);
    expect(hcp.outcomesOf(during.call_id)[0].outcome).toEqual({ status: 'succeeded', value: running('vm-1') });
    const after = call({ op: 'check' });
    hcp.offer(after);
    await eventually('a call after the outage is run', () => hcp.outcomesOf(after.call_id).length === 1);
    expect(driver.callsOf('startVm')).toHaveLength(1);
  });

  it('exits "credential rejected" when HCP answers 401, instead of retrying', async () => {
    await enrolled();
    const agent = start();
    await eventually('ready', () => logged(agent, /ready: host host-1/));
    hcp.revoke();
    await expect(agent.exit).resolves.toBe(EXIT_CODES.credentialRejected);
    expect(
      logged(
        agent,
        /HCP refused this host's credential \(401: host credential revoked\): it was revoked or rotated away/,
      ),
    ).toBe(true);
    expect(logged(agent, /remove .*credential.json and run the agent with a new bootstrap token/)).toBe(true);
  });

  it('works again with a rotated credential put in place with --replace-credential', async () => {
    await enrolled();
    hcp.credential = 'hcph_rotated';
    const refused = start();
    await expect(refused.exit).resolves.toBe(EXIT_CODES.credentialRejected);

    const replacing = startAgent(args('--replace-credential'), driver, { HCP_AGENT_CREDENTIAL: 'hcph_rotated' });
    await expect(replacing.exit).resolves.toBe(EXIT_CODES.ok);
    expect(logged(replacing, /the credential of host host-1 in .*credential.json is replaced/)).toBe(true);
    const restarted = start();
    await eventually('ready with the rotated credential', () => logged(restarted, /ready: host host-1/));

    const nothing = startAgent(args('--replace-credential'), driver);
    await expect(nothing.exit).resolves.toBe(EXIT_CODES.badArguments);
    expect(logged(nothing, /needs the new host credential \(hcph_…\) in HCP_AGENT_CREDENTIAL or on stdin/)).toBe(true);
  });

  it('reports a claimed call that is not a valid host call as INVALID_REQUEST, and goes on', async () => {
    await enrolled();
    start();
    const invalid = call({ op: 'start' });
    const unknown = call({ op: 'format_disk', hcp_id: 'vm-1' });
    const valid = call({ op: 'start', hcp_id: 'vm-1' });
    for (const c of [invalid, unknown, valid]) hcp.offer(c);
    await eventually('three outcomes', () => hcp.outcomeAttempts.length >= 3);
    for (const bad of [invalid, unknown]) {
      expect(hcp.outcomesOf(bad.call_id)).toEqual([
        expect.objectContaining({
          outcome: { status: 'failed', error: expect.objectContaining({ code: 'INVALID_REQUEST', retryable: false }) },
        }),
      ]);
    }
    expect(hcp.outcomesOf(valid.call_id)[0].outcome).toMatchObject({ status: 'succeeded' });
    expect(driver.callsOf('startVm').map((c) => c.args)).toEqual([['vm-1']]);
  });

  it('on stop, claims nothing more and lets a running call finish and report before exiting', async () => {
    await enrolled();
    const released = deferred();
    driver.answer('deleteVm', async () => {
      await released.promise;
    });
    const agent = start();
    const deleting = call({ op: 'delete', hcp_id: 'vm-1' });
    hcp.offer(deleting);
    await eventually('the call runs', () => driver.callsOf('deleteVm').length === 1);
    agent.stop();
    await eventually('the agent is stopping', () => logged(agent, /stopping: no new calls/));
    hcp.offer(call({ op: 'check' }));
    released.resolve();
    await expect(agent.exit).resolves.toBe(EXIT_CODES.ok);
    expect(hcp.outcomesOf(deleting.call_id)).toHaveLength(1);
    expect(driver.callsOf('checkConnectivity')).toHaveLength(0);
    expect(logged(agent, /info stopped$/)).toBe(true);
  });
});
