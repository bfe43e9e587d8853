/**
 * An agent cluster end to end, on real libvirt with QEMU booting a real guest: ops register a libvirt
 * provider, enroll a host agent and put its cluster in a zone; a tenant creates, stops, starts, reboots,
 * opens a console on and deletes a VM, and `virsh` (not HCP) shows the domain and its QEMU process at each
 * step. The agent is killed mid-call and restarted: the job finishes once. Slow (QEMU under software
 * emulation): one guest at a time, 128 MiB.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { connectConsole } from '../support/console-client';
import { HcpProcess } from '../support/hcp-process';
import { HostAgentProcess } from '../support/host-agent-process';
import { describeWithLibvirt, ensureTestGuest, type TestGuest } from '../support/libvirt-guest';
import { createTestDatabase, type TestDatabase } from '../support/test-database';

jest.setTimeout(600_000);

const URI = 'qemu:///system';
const PROJECT = 'acme';
const JOB_TIMEOUT_MS = 180_000;

const virsh = (...args: string[]): string =>
  execFileSync('virsh', ['-c', URI, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

function domainState(hcpId: string): string | null {
  try {
    return virsh('domstate', '--reason', `hcp-${hcpId}`);
  } catch {
    return null;
  }
}

/** The QEMU process libvirt runs for the domain, found by its `-name guest=...` argument. */
function qemuProcesses(hcpId: string): number {
  try {
    return execFileSync('pgrep', ['-f', `guest=hcp-${hcpId}`], { encoding: 'utf8' })
      .trim()
      .split('\n').length;
  } catch {
    return 0;
  }
}

function poolVolumes(pool: string): string[] {
  return virsh('vol-list', pool)
    .split('\n')
    .slice(2)
    .map((line) => line.trim().split(/\s+/)[0]!)
    .filter(Boolean);
}

let db: TestDatabase;
let hcp: HcpProcess;
let agent: HostAgentProcess;
let stateDir: string;
let infra: ApiClient;
let tenant: ApiClient;
let guest: TestGuest;
const ids = { provider: '', cluster: '', image: '', flavor: '', host: '' };

function startAgent(token?: string): HostAgentProcess {
  return HostAgentProcess.start({
    hcp: hcp.baseUrl,
    ...(token ? { token } : {}),
    stateDir,
    identity: 'e2e-kvm-host-1',
    pool: guest.pool,
    consoleHost: '127.0.0.1',
  });
}

describeWithLibvirt('a libvirt host behind a host agent', () => {
  beforeAll(async () => {
    guest = await ensureTestGuest();
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_RECONCILE_INTERVAL_MS: '0',
        HCP_HOST_HEARTBEAT_TIMEOUT_MS: '5000',
        // A call of a killed agent is claimed again after this: short, so the restart test is quick.
        HCP_HOST_CALL_LEASE_MS: '4000',
        HCP_HOST_CALL_POLL_MS: '100',
      },
    });
    infra = new ApiClient(hcp.baseUrl, hcp.token('ingrid', {}, ['infra-admin']));
    const operator = new ApiClient(hcp.baseUrl, hcp.token('olga', {}, ['cloud-operator']));
    tenant = new ApiClient(hcp.baseUrl, hcp.token('tina', { [PROJECT]: 'admin' }));

    const provider = await infra.post('/v1/ops/providers', { name: 'kvm', type: 'libvirt', settings: {} });
    expect(provider.status).toBe(201);
    ids.provider = provider.body.id;
    const cluster = await infra.post('/v1/ops/clusters', { name: 'kvm-rack-1', provider_id: ids.provider });
    expect(cluster.status).toBe(201);
    ids.cluster = cluster.body.id;
    expect(
      (await operator.post('/v1/ops/zones', { id: 'kvm', name: 'KVM', cluster_ids: [ids.cluster], policy: 'spread' }))
        .status,
    ).toBe(201);
    const image = await operator.post('/v1/ops/images', {
      name: 'busybox-guest',
      os: 'linux',
      min_disk_gb: 1,
      min_ram_mb: 64,
      visibility: 'public',
      provider_refs: { [ids.cluster]: guest.image_ref },
    });
    expect(image.status).toBe(201);
    ids.image = image.body.id;
    const flavor = await operator.post('/v1/ops/flavors', { name: 'kvm-tiny', vcpus: 1, ram_mb: 128, disk_gb: 1 });
    expect(flavor.status).toBe(201);
    ids.flavor = flavor.body.id;

    const enrollment = await infra.post(`/v1/ops/clusters/${ids.cluster}/enrollments`, {});
    expect(enrollment.status).toBe(201);
    stateDir = mkdtempSync(path.join(tmpdir(), 'hcp-agent-e2e-'));
    agent = startAgent(enrollment.body.token);
    ids.host = await eventually(
      async () => {
        const hosts = (await infra.get(`/v1/ops/hosts?cluster_id=${ids.cluster}`)).body.items as Array<{
          id: string;
          online: boolean;
        }>;
        return hosts.find((h) => h.online)?.id;
      },
      `the agent online in GET /v1/ops/hosts (agent output: ${agent.logs})`,
      60_000,
    );
    await eventually(async () => {
      const zones = (await tenant.get('/v1/zones')).body.items as Array<{ id: string }>;
      return zones.some((z) => z.id === 'kvm') && (await tenant.get(`/v1/images/${ids.image}`)).status === 200
        ? true
        : undefined;
    }, 'zone kvm and its image in the tenant catalog');
  }, 600_000);

  afterAll(async () => {
    await agent?.stop();
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
    // Whatever a failed test left: no domain or disk of this suite stays on the machine.
    for (const line of virsh('list', '--all', '--name').split('\n')) {
      const name = line.trim();
      if (!name.startsWith('hcp-') || !leftovers.has(name.slice(4))) continue;
      try {
        virsh('destroy', name);
      } catch {
        // not running
      }
      try {
        virsh('undefine', name, '--remove-all-storage');
      } catch {
        // gone already
      }
    }
  });

  const leftovers = new Set<string>();

  async function createVm(name: string): Promise<string> {
    const res = await tenant.post(
      `/v1/projects/${PROJECT}/vms`,
      { name, zone: 'kvm', image_id: ids.image, flavor_id: ids.flavor },
      { 'Idempotency-Key': randomUUID() },
    );
    expect(res.status).toBe(202);
    leftovers.add(res.body.resource_id);
    const job = await jobFinished(tenant, PROJECT, res.body.job_id, JOB_TIMEOUT_MS);
    expect(job).toMatchObject({ status: 'succeeded' });
    return res.body.resource_id;
  }

  async function act(vmId: string, action: string, body: Record<string, unknown> = {}): Promise<any> {
    const res = await tenant.post(`/v1/projects/${PROJECT}/vms/${vmId}/actions/${action}`, body, {
      'Idempotency-Key': randomUUID(),
    });
    expect(res.status).toBe(202);
    return jobFinished(tenant, PROJECT, res.body.job_id, JOB_TIMEOUT_MS);
  }

  it('runs the whole lifecycle of a real guest, as virsh sees it at each step', async () => {
    const vmId = await createVm('lifecycle');
    expect(domainState(vmId)).toMatch(/^running/);
    expect(qemuProcesses(vmId)).toBe(1);
    expect(poolVolumes(guest.pool)).toContain(`hcp-${vmId}.qcow2`);
    const vm = (await tenant.get(`/v1/projects/${PROJECT}/vms/${vmId}`)).body;
    expect(vm).toMatchObject({ status: 'running' });

    // A graceful stop is the guest shutting itself down on the ACPI power button, not HCP pulling the plug.
    expect(await act(vmId, 'stop')).toMatchObject({ status: 'succeeded' });
    expect(domainState(vmId)).toBe('shut off (shutdown)');
    expect(qemuProcesses(vmId)).toBe(0);

    expect(await act(vmId, 'start')).toMatchObject({ status: 'succeeded' });
    expect(domainState(vmId)).toMatch(/^running/);
    expect(qemuProcesses(vmId)).toBe(1);

    expect(await act(vmId, 'reboot')).toMatchObject({ status: 'succeeded' });
    expect(domainState(vmId)).toMatch(/^running/);

    const del = await tenant.delete(`/v1/projects/${PROJECT}/vms/${vmId}`);
    expect(del.status).toBe(202);
    expect(await jobFinished(tenant, PROJECT, del.body.job_id, JOB_TIMEOUT_MS)).toMatchObject({ status: 'succeeded' });
    expect(domainState(vmId)).toBeNull();
    expect(qemuProcesses(vmId)).toBe(0);
    const volumes = poolVolumes(guest.pool);
    expect(volumes).not.toContain(`hcp-${vmId}.qcow2`);
    expect(volumes).toContain(guest.image_ref);
    leftovers.delete(vmId);
  });

  it("relays the guest's own VNC screen through HCP's console proxy", async () => {
    const vmId = await createVm('console');
    const session = await tenant.post(`/v1/projects/${PROJECT}/vms/${vmId}/console`, { type: 'vnc' });
    expect(session.status).toBe(201);
    const client = await connectConsole(session.body.url, session.body.token);
    expect(client.serverInit.width).toBeGreaterThan(0);
    // A full (non-incremental) framebuffer update of the whole screen, raw pixels.
    const { width, height } = client.serverInit;
    const frame = new Promise<Buffer>((resolve, reject) => {
      let received = Buffer.alloc(0);
      const timer = setTimeout(() => reject(new Error('no framebuffer update within 30 s')), 30_000);
      client.ws.on('message', (data: Buffer) => {
        received = Buffer.concat([received, data]);
        if (received[0] === 0 && received.length >= 4 + 12 + width * height) {
          clearTimeout(timer);
          resolve(received);
        }
      });
    });
    const request = Buffer.alloc(10);
    request.writeUInt8(3, 0);
    request.writeUInt8(0, 1);
    request.writeUInt16BE(width, 6);
    request.writeUInt16BE(height, 8);
    client.ws.send(request);
    const update = await frame;
    expect(update.readUInt16BE(2)).toBeGreaterThanOrEqual(1); // rectangles
    // The guest's text console: some pixels lit, not a blank screen.
    expect(update.subarray(16).some((byte) => byte !== 0)).toBe(true);
    client.ws.close();
    await client.closed;
    const del = await tenant.delete(`/v1/projects/${PROJECT}/vms/${vmId}`);
    await jobFinished(tenant, PROJECT, del.body.job_id, JOB_TIMEOUT_MS);
    leftovers.delete(vmId);
  });

  it('finishes a job once when its agent is killed mid-call and started again', async () => {
    const vmId = await createVm('agent-crash');
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      const res = await tenant.post(
        `/v1/projects/${PROJECT}/vms/${vmId}/actions/stop`,
        {},
        { 'Idempotency-Key': randomUUID() },
      );
      expect(res.status).toBe(202);
      await eventually(async () => {
        const rows = await pg.query(
          `SELECT 1 FROM host_calls WHERE hcp_id = $1 AND op = 'stop' AND status = 'claimed'`,
          [vmId],
        );
        return rows.rowCount ? true : undefined;
      }, 'the stop call claimed by the agent');
      await agent.kill();
      agent = startAgent(); // its credential file, no token: a restart, not a new enrollment
      const job = await jobFinished(tenant, PROJECT, res.body.job_id, JOB_TIMEOUT_MS);
      expect(job).toMatchObject({ status: 'succeeded' });
      expect(domainState(vmId)).toMatch(/^shut off/);
      const history = await pg.query(
        `SELECT type FROM hcp_events WHERE stream_id = $1 AND type IN ('VmStopped', 'VmOperationFailed')`,
        [`vm-${vmId}`],
      );
      expect(history.rows.map((r) => r.type)).toEqual(['VmStopped']);
      const calls = await pg.query(`SELECT claims, status FROM host_calls WHERE hcp_id = $1 AND op = 'stop'`, [vmId]);
      expect(calls.rows).toEqual([{ claims: 2, status: 'succeeded' }]);
    } finally {
      await pg.end();
    }
    const del = await tenant.delete(`/v1/projects/${PROJECT}/vms/${vmId}`);
    await jobFinished(tenant, PROJECT, del.body.job_id, JOB_TIMEOUT_MS);
    expect(domainState(vmId)).toBeNull();
    leftovers.delete(vmId);
  });

  it('refuses a bootstrap token the second time and a revoked credential at once', async () => {
    const enrollment = await infra.post(`/v1/ops/clusters/${ids.cluster}/enrollments`, {});
    const enroll = (identity: string) =>
      fetch(`${hcp.baseUrl}/internal/v1/enroll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: enrollment.body.token, identity, hostname: identity }),
      });
    expect((await enroll('e2e-kvm-host-2')).status).toBe(201);
    expect((await enroll('e2e-kvm-host-3')).status).toBe(409);

    const { credential } = JSON.parse(readFileSync(path.join(stateDir, 'credential.json'), 'utf8'));
    expect((await infra.post(`/v1/ops/hosts/${ids.host}/revoke`, {})).status).toBe(200);
    const heartbeat = await fetch(`${hcp.baseUrl}/internal/v1/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` },
      body: JSON.stringify({ capacity: { vcpus: 1, ram_mb: 1, free_ram_mb: 1 }, driver: 'libvirt', capabilities: {} }),
    });
    expect(heartbeat.status).toBe(401);
    // The agent hears the same at its next heartbeat and stops, saying so, instead of spinning.
    expect(await agent.exited()).toEqual({ code: 4, signal: null });
    expect(agent.logs).toMatch(/revoked|rotated/i);
  });
});
