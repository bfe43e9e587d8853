import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { writeCredential } from '../../../src/host-agent/credential-file';
import { EXIT_CODES } from '../../../src/host-agent/exit-codes';
import { HostAgentProcess } from '../../support/host-agent-process';
import { ScriptedHcp } from './scripted-hcp';

async function eventually(what: string, condition: () => boolean, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `npm run agent`'s entry point as a process: its exit codes and signal handling, over the real libvirt. */
describe('host agent process', () => {
  let hcp: ScriptedHcp;
  let stateDir: string;
  let agent: HostAgentProcess | undefined;

  beforeEach(async () => {
    hcp = new ScriptedHcp();
    await hcp.start();
    stateDir = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'hcp-agent-process-')), 'state');
  });

  afterEach(async () => {
    await agent?.kill();
    agent = undefined;
    await hcp.stop();
    await fs.rm(path.dirname(stateDir), { recursive: true, force: true });
  });

  const start = (token?: string) =>
    HostAgentProcess.start({
      hcp: hcp.url,
      token,
      stateDir,
      identity: 'machine-1',
      pool: 'hcp-agent-process-test',
      heartbeatIntervalMs: 500,
    });

  it('exits "cannot enroll" (3) with HCP’s reason when the token is refused', async () => {
    agent = start('hcpb_wrong');
    await expect(agent.exited()).resolves.toEqual({ code: EXIT_CODES.cannotEnroll, signal: null });
    expect(agent.logs).toMatch(
      /error hcp-agent: cannot enroll: HCP refused the bootstrap token \(401: bootstrap token invalid or expired\)/,
    );
  });

  it('runs a call on libvirt, and exits 0 on SIGTERM', async () => {
    await writeCredential(stateDir, {
      host_id: 'host-1',
      cluster_id: 'cluster-1',
      credential: hcp.credential,
      hcp: hcp.url,
    });
    agent = start();
    await eventually('ready', () => /ready: host host-1/.test(agent!.logs));
    expect(hcp.heartbeats[0]).toMatchObject({ driver: 'libvirt', capacity: { vcpus: expect.any(Number) } });
    hcp.offer({
      call_id: 'call-list',
      request: { op: 'list' },
      deadline: new Date(Date.now() + 60_000).toISOString(),
      lease_ms: 30_000,
      reclaimed: false,
    });
    await eventually('the outcome', () => hcp.outcomesOf('call-list').length === 1);
    expect(hcp.outcomesOf('call-list')[0].outcome).toEqual({ status: 'succeeded', value: expect.any(Array) });
    await agent.stop();
    await expect(agent.exited()).resolves.toEqual({ code: EXIT_CODES.ok, signal: null });
    expect(agent.logs).toMatch(/info hcp-agent: SIGTERM received[\s\S]*info hcp-agent: stopped\n/);
  });
});
