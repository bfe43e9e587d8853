import { randomUUID } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { ProxmoxSimulator } from '../simulators/proxmox/proxmox-simulator';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { ProxmoxStack, startProxmoxStack, stopProxmoxStack } from '../support/proxmox-stack';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

/**
 * Provider truth end to end, against "Proxmox VE": what someone does to a VM directly through the
 * Proxmox API (stop it, delete it) and what a reboot leaves unknown (the guest agent's addresses) reach
 * HCP's record through an on-demand reconcile (POST /v1/ops/vms/{id}/reconcile), and show in the VM,
 * the audit trail and metering; a tag PATCH reaches the Proxmox VM the same way. The periodic loop is
 * off here (HCP_RECONCILE_INTERVAL_MS=0), so each observation is the one the test asked for.
 */
describe('reconcile end to end', () => {
  let stack: ProxmoxStack;
  let sim: ProxmoxSimulator;
  let pve: { url: string; caPem: string; header: string };
  let db: TestDatabase;
  let operator: ApiClient;
  let auditor: ApiClient;
  let tenant: ApiClient;
  let ids: ProxmoxStack['ids'];

  beforeAll(async () => {
    stack = await startProxmoxStack({
      // The guest agent answers 1 s after a (re)boot: a reboot's own answer comes before it.
      latency: { scale: 0.05, agentBootMs: 20_000 },
      env: { HCP_JOB_MAX_ATTEMPTS: '2', HCP_JOB_RETRY_BACKOFF_MS: '50', HCP_RECONCILE_INTERVAL_MS: '0' },
      name: 'pve-reconcile',
      providerSettings: { bridge: 'vmbr0', address_wait_s: 0, shutdown_timeout_s: 2 },
      placementHints: { nodes: ['pve1'] },
      imageMinDiskGb: 2,
      flavor: { vcpus: 1, ram_mb: 1024, disk_gb: 2 },
    });
    ({ sim, db, operator, auditor, tenant, ids } = stack);
    pve = { url: stack.pve.url, caPem: stack.pve.caPem, header: sim.createToken('ops@pam', 'hands').header };
  });

  afterAll(() => stopProxmoxStack(stack));

  /** A request straight to the Proxmox API, as someone in the Proxmox UI or with `qm` would make it. */
  function proxmox(method: string, path: string): Promise<{ status: number; body: { data?: unknown } }> {
    const target = new URL(`/api2/json${path}`, pve.url);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(target, { method, ca: pve.caPem, headers: { authorization: pve.header } }, (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** Runs a Proxmox task behind HCP's back and waits for it to end. */
  async function behindHcpBack(method: string, path: string): Promise<void> {
    const res = await proxmox(method, path);
    expect(res.status).toBe(200);
    const upid = String(res.body.data);
    const node = upid.split(':')[1];
    await eventually(async () => {
      const status = await proxmox('GET', `/nodes/${node}/tasks/${encodeURIComponent(upid)}/status`);
      return (status.body.data as { status?: string })?.status === 'stopped' ? true : undefined;
    }, `task ${upid}`);
  }

  const pveVm = (vmId: string) => {
    const [vm] = sim.vmsByHcpId(vmId);
    return vm;
  };

  async function runningVm(name: string): Promise<string> {
    const res = await tenant.post('/v1/projects/acme/vms', {
      name,
      zone: 'pve',
      image_id: ids.image,
      flavor_id: ids.flavor,
      tags: { env: 'dev' },
    });
    expect(res.status).toBe(202);
    expect((await jobFinished(tenant, 'acme', res.body.job_id)).status).toBe('succeeded');
    await settled(res.body.resource_id, (vm) => vm.status === 'running');
    return res.body.resource_id;
  }

  const settled = (vmId: string, ok: (vm: any) => boolean) =>
    eventually(async () => {
      const vm = (await tenant.get(`/v1/projects/acme/vms/${vmId}`)).body;
      return ok(vm) ? vm : undefined;
    }, `VM ${vmId}`);

  /** Ops ask for a reconcile of the VM now; resolves with the finished job. */
  async function reconcile(vmId: string): Promise<any> {
    const res = await operator.post(`/v1/ops/vms/${vmId}/reconcile`, undefined, { 'Idempotency-Key': randomUUID() });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ resource_id: vmId, job_id: expect.any(String) });
    expect(res.headers.get('location')).toBe(`/v1/projects/acme/jobs/${res.body.job_id}`);
    const job = await jobFinished(tenant, 'acme', res.body.job_id);
    expect(job).toMatchObject({ type: 'vm.reconcile', status: 'succeeded', resource_id: vmId });
    return job;
  }

  const auditOf = (vmId: string, action: string) =>
    eventually(async () => {
      const res = await auditor.get(`/v1/ops/audit?action=${action}&target=${vmId}`);
      return res.body.items?.length ? res.body.items : undefined;
    }, `${action} audit of ${vmId}`);

  it('shows a VM stopped behind HCP back as stopped, audited, and metered as powered off', async () => {
    const vmId = await runningVm('stopped-aside');
    const { node, vmid } = pveVm(vmId);
    await behindHcpBack('POST', `/nodes/${node}/qemu/${vmid}/status/stop`);

    const job = await reconcile(vmId);
    const vm = await settled(vmId, (v) => v.status === 'stopped');
    expect(vm).toMatchObject({ desired_state: 'stopped', addresses: [] });
    // The reconcile job never owned the VM: its last job is still the create.
    expect(vm.last_job_id).not.toBe(job.id);

    const [record] = await auditOf(vmId, 'vm.drift_observed');
    expect(record).toMatchObject({
      actor: 'hcp-reconciler',
      result: 'succeeded',
      project_id: 'acme',
      details: { previous_status: 'running', power_state: 'stopped' },
    });
    const metering = await eventually(async () => {
      const items = (await operator.get(`/v1/ops/metering?vm_id=${vmId}`)).body.items as Array<{ kind: string }>;
      return items?.some((r) => r.kind === 'vm.powered_off') ? items : undefined;
    }, 'powered_off record');
    expect(metering.map((r) => r.kind)).toEqual(
      expect.arrayContaining(['vm.allocated', 'vm.powered_on', 'vm.powered_off']),
    );

    // Level-driven: asking again over the same truth records nothing more.
    await reconcile(vmId);
    const events = await queryDatabase<{ type: string }>(
      db.url,
      `SELECT type FROM hcp_events WHERE stream_id = $1 AND type = 'VmStateObserved'`,
      [`vm-${vmId}`],
    );
    expect(events).toHaveLength(1);
  });

  it('puts a VM deleted behind HCP back in error with the reason vanished_at_provider', async () => {
    const vmId = await runningVm('deleted-aside');
    const { node, vmid } = pveVm(vmId);
    await behindHcpBack('POST', `/nodes/${node}/qemu/${vmid}/status/stop`);
    await behindHcpBack('DELETE', `/nodes/${node}/qemu/${vmid}`);
    expect(sim.vmsByHcpId(vmId)).toEqual([]);

    await reconcile(vmId);
    const vm = await settled(vmId, (v) => v.status === 'error');
    expect(vm.addresses).toEqual([]);
    const [record] = await auditOf(vmId, 'vm.vanished');
    expect(record.details).toMatchObject({ previous_status: 'running', reason: 'vanished_at_provider' });
    const [vanished] = await queryDatabase<{ data: Record<string, unknown> }>(
      db.url,
      `SELECT data FROM hcp_events WHERE stream_id = $1 AND type = 'VmVanished'`,
      [`vm-${vmId}`],
    );
    expect(vanished.data).toMatchObject({ reason: 'vanished_at_provider', previous_status: 'running' });
    // The tenant can still delete it: nothing is left to remove at the provider.
    const deleted = await tenant.delete(`/v1/projects/acme/vms/${vmId}`);
    expect(deleted.status).toBe(202);
    expect((await jobFinished(tenant, 'acme', deleted.body.job_id)).status).toBe('succeeded');
  });

  it('refreshes the addresses a reboot left empty once the guest agent answers', async () => {
    const vmId = await runningVm('rebooted');
    const reboot = await tenant.post(`/v1/projects/acme/vms/${vmId}/actions/reboot`, { force: false });
    expect(reboot.status).toBe(202);
    expect((await jobFinished(tenant, 'acme', reboot.body.job_id)).status).toBe('succeeded');
    const afterReboot = await settled(vmId, (v) => v.status === 'running' && v.last_job_id === reboot.body.job_id);
    expect(afterReboot.addresses).toEqual([]);

    const expected = sim.guestAddress(pveVm(vmId).vmid);
    const refreshed = await eventually(async () => {
      await reconcile(vmId);
      const vm = (await tenant.get(`/v1/projects/acme/vms/${vmId}`)).body;
      return vm.addresses.length ? vm : undefined;
    }, 'addresses after the reboot');
    expect(refreshed.addresses).toEqual([{ type: 'ipv4', address: expected, nic: 'net0' }]);
    expect(refreshed.status).toBe('running');
  });

  it('writes PATCHed tags to the Proxmox VM, keeping the tags that identify it', async () => {
    const vmId = await runningVm('tagged');
    const patched = await tenant.patch(`/v1/projects/acme/vms/${vmId}`, { tags: { env: 'prod', Team: 'Blue Ops' } });
    expect(patched.status).toBe(200);
    await settled(vmId, (v) => v.tags.env === 'prod');

    await reconcile(vmId);
    const config = pveVm(vmId);
    expect(config.tags).toEqual(expect.arrayContaining(['hcp', `hcp-id-${vmId}`, 'env.prod', 'team.blue_ops']));
    expect(config.tags).not.toContain('env.dev');
    expect(config.description).toContain('hcp-tags: {"env":"prod","Team":"Blue Ops"}');
    // The VM is still HCP's: another reconcile finds it and has nothing more to write.
    await reconcile(vmId);
    expect((await tenant.get(`/v1/projects/acme/vms/${vmId}`)).body.status).toBe('running');
  });

  it('answers 404 for a VM HCP does not have, and the same job for a retried request', async () => {
    const unknown = await operator.post(`/v1/ops/vms/${randomUUID()}/reconcile`, undefined, {
      'Idempotency-Key': randomUUID(),
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');

    const vmId = await runningVm('retried');
    const key = randomUUID();
    const first = await operator.post(`/v1/ops/vms/${vmId}/reconcile`, undefined, { 'Idempotency-Key': key });
    const again = await operator.post(`/v1/ops/vms/${vmId}/reconcile`, undefined, { 'Idempotency-Key': key });
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.body.job_id).toBe(first.body.job_id);
    // Tenants may not ask for it.
    expect((await tenant.post(`/v1/ops/vms/${vmId}/reconcile`)).status).toBe(403);
  });
});

/**
 * The periodic pass on its own, on the embedded simulator provider: nobody asks, and what changed at the
 * provider still reaches HCP's record, while a provider listing that fails half the time is counted and
 * the passes after it go on.
 */
describe('periodic reconcile end to end', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let tenant: ApiClient;
  let choice: { image_id: string; flavor_id: string };

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_SIMULATOR_LATENCY_SCALE: '0.05',
        HCP_RECONCILE_INTERVAL_MS: '300',
        HCP_SIMULATOR_FAULTS: 'list=fail:PROVIDER_UNAVAILABLE@0.5',
      },
    });
    tenant = new ApiClient(hcp.baseUrl, hcp.token('tina', { acme: 'admin' }));
    choice = await seededChoice(tenant);
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  const metric = async (line: RegExp): Promise<number> => {
    const text = await (await fetch(`${hcp.baseUrl}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => line.test(l))
      .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  };

  it('records a VM stopped at the provider without being asked, and writes PATCHed tags there', async () => {
    const res = await tenant.post('/v1/projects/acme/vms', { name: 'web', zone: 'local', ...choice, tags: { a: '1' } });
    expect(res.status).toBe(202);
    const vmId = res.body.resource_id;
    expect((await jobFinished(tenant, 'acme', res.body.job_id)).status).toBe('succeeded');

    await queryDatabase(
      db.url,
      `UPDATE simulator.vms SET power_state = 'stopped', addresses = '[]' WHERE hcp_id = $1`,
      [vmId],
    );
    const vm = await eventually(async () => {
      const body = (await tenant.get(`/v1/projects/acme/vms/${vmId}`)).body;
      return body.status === 'stopped' ? body : undefined;
    }, 'VM stopped by the periodic pass');
    expect(vm).toMatchObject({ desired_state: 'stopped', addresses: [] });
    expect(await metric(/^hcp_reconcile_drift_total\{kind="power_state"\}/)).toBeGreaterThanOrEqual(1);

    expect((await tenant.patch(`/v1/projects/acme/vms/${vmId}`, { tags: { a: '2', b: 'x' } })).status).toBe(200);
    await eventually(async () => {
      const [row] = await queryDatabase<{ tags: Record<string, string> }>(
        db.url,
        'SELECT tags FROM simulator.vms WHERE hcp_id = $1',
        [vmId],
      );
      return row.tags.a === '2' && row.tags.b === 'x' ? true : undefined;
    }, 'tags at the provider');

    // Half the listings failed on the way: each was counted, and the passes after it went on.
    await eventually(
      async () => ((await metric(/^hcp_reconcile_failures_total/)) >= 1 ? true : undefined),
      'a failed pass counted',
    );
    expect(await metric(/^hcp_reconcile_duration_seconds_count\{provider="simulator"\}/)).toBeGreaterThanOrEqual(1);
  });
});
