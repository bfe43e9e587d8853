import { randomUUID } from 'node:crypto';
import { ProxmoxDriver } from '@hcp/providers';
import { ProxmoxSimulator } from '../simulators/proxmox/proxmox-simulator';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { makeVmAtProxmox } from '../support/proxmox-behind-hcp';
import { ProxmoxStack, startProxmoxStack, stopProxmoxStack } from '../support/proxmox-stack';

/**
 * Orphans end to end, against "Proxmox VE": the reconcile loop lists the cluster every half second, the
 * orphans context reads its listings, and ops list, destroy and adopt what no live VM owns over HTTP.
 * The VMs that become orphans are made at Proxmox with an HCP id by a driver of the test's own, as a
 * create whose answer was lost, a cleanup that failed or a restored backup would leave them.
 */
interface Stack extends ProxmoxStack {
  /** A driver of the test's own on the same Proxmox, to act behind HCP's back. */
  driver: ProxmoxDriver;
}

/** Proxmox (the simulator) registered in an HCP whose reconcile loop lists the cluster every half second. */
async function startStack(env: Record<string, string> = {}): Promise<Stack> {
  const stack = await startProxmoxStack({
    latency: { scale: 0.02 },
    env: { HCP_JOB_MAX_ATTEMPTS: '2', HCP_JOB_RETRY_BACKOFF_MS: '50', HCP_RECONCILE_INTERVAL_MS: '500', ...env },
    name: 'pve-orphans',
    providerSettings: { bridge: 'vmbr0', address_wait_s: 0, full_clone: true, shutdown_timeout_s: 2 },
    placementHints: { nodes: ['pve1'], storage: 'local-lvm' },
    imageMinDiskGb: 4,
    flavor: { vcpus: 1, ram_mb: 1024, disk_gb: 8 },
  });
  const driver = new ProxmoxDriver({
    endpoint: stack.pve.url,
    credentials: { token_id: stack.token.tokenId, token_secret: stack.token.secret },
    tls: { fingerprint_sha256: stack.pve.fingerprint256 },
    settings: { storage: 'local-lvm', bridge: 'vmbr0', full_clone: true, address_wait_s: 0 },
    provider_id: stack.ids.provider,
    cluster_id: stack.ids.cluster,
  });
  return { ...stack, driver };
}

async function stopStack(stack: Stack | undefined): Promise<void> {
  await stack?.driver.close();
  await stopProxmoxStack(stack);
}

/** The orphan of `hcpId` once the orphan list shows it in `status`. */
function listedOrphan(stack: Stack, hcpId: string, status = 'open') {
  return eventually(async () => {
    const res = await stack.operator.get(`/v1/ops/orphans?cluster_id=${stack.ids.cluster}&status=${status}&limit=200`);
    expect(res.status).toBe(200);
    return res.body.items.find((o: { hcp_id: string }) => o.hcp_id === hcpId);
  }, `orphan ${hcpId} ${status}`);
}

describe('orphans end to end', () => {
  let stack: Stack;
  let sim: ProxmoxSimulator;
  let infra: ApiClient;
  let operator: ApiClient;
  let auditor: ApiClient;
  let tenant: ApiClient;
  let ids: Stack['ids'];

  beforeAll(async () => {
    stack = await startStack();
    ({ sim, infra, operator, auditor, tenant, ids } = stack);
  });

  afterAll(() => stopStack(stack));

  async function createVm(name: string): Promise<{ resource_id: string; job_id: string }> {
    const created = await tenant.post('/v1/projects/acme/vms', {
      name,
      zone: 'pve',
      image_id: ids.image,
      flavor_id: ids.flavor,
    });
    expect(created.status).toBe(202);
    return created.body;
  }

  it('lists the Proxmox VM of a deleted VM as an orphan; ops destroy it, Proxmox no longer has it and the orphan shows destroyed', async () => {
    const vm = await createVm('soon-deleted');
    expect((await jobFinished(tenant, 'acme', vm.job_id)).status).toBe('succeeded');
    const deleted = await tenant.delete(`/v1/projects/acme/vms/${vm.resource_id}`);
    expect((await jobFinished(tenant, 'acme', deleted.body.job_id)).status).toBe('succeeded');
    await makeVmAtProxmox(stack.driver, vm.resource_id, false);

    const orphan = await listedOrphan(stack, vm.resource_id);
    expect(orphan).toMatchObject({
      provider_id: ids.provider,
      cluster_id: ids.cluster,
      project_id: 'acme',
      hcp_record: 'deleted',
      power_state: 'stopped',
      actions: ['destroy'],
      job_id: null,
    });
    expect(JSON.stringify(orphan)).not.toMatch(/vmid|pve1|"node"/);
    // Nothing is destroyed by itself under the default policy.
    expect(sim.vmsByHcpId(vm.resource_id)).toHaveLength(1);

    const refused = await operator.post(`/v1/ops/orphans/${orphan.id}/destroy`);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');

    const key = { 'idempotency-key': `destroy-${orphan.id}` };
    const accepted = await infra.post(`/v1/ops/orphans/${orphan.id}/destroy`, undefined, key);
    expect(accepted.status).toBe(202);
    expect(accepted.body).toEqual({ resource_id: orphan.id, job_id: expect.any(String) });
    expect(accepted.headers.get('location')).toBe(`/v1/ops/orphans/${orphan.id}`);
    const replayed = await infra.post(`/v1/ops/orphans/${orphan.id}/destroy`, undefined, key);
    expect(replayed.status).toBe(202);
    expect(replayed.body).toEqual(accepted.body);

    const destroyed = await eventually(async () => {
      const res = await infra.get(`/v1/ops/orphans/${orphan.id}`);
      return res.body.status === 'destroyed' ? res.body : undefined;
    }, 'orphan destroyed');
    expect(destroyed).toMatchObject({ job_id: accepted.body.job_id, actions: [], error: null });
    expect(sim.vmsByHcpId(vm.resource_id)).toEqual([]);
    const jobs = await operator.get(`/v1/ops/jobs?resource_id=${orphan.id}`);
    expect(jobs.body.items).toEqual([
      expect.objectContaining({
        id: accepted.body.job_id,
        type: 'orphan.destroy',
        project_id: 'acme',
        status: 'succeeded',
      }),
    ]);
    // Resolved: out of the default list, and a later listing does not find it again.
    const open = await operator.get(`/v1/ops/orphans?cluster_id=${ids.cluster}`);
    expect(open.body.items.map((o: { id: string }) => o.id)).not.toContain(orphan.id);

    const audit = await eventually(async () => {
      const res = await auditor.get(`/v1/ops/audit?action=orphan.destroy&limit=200`);
      const mine = res.body.items.filter((r: { target: { orphan_id?: string } }) => r.target.orphan_id === orphan.id);
      return mine.some((r: { result: string }) => r.result === 'succeeded') ? mine : undefined;
    }, 'audit of the destroy');
    expect(audit).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ actor: 'ingrid', result: 'accepted', project_id: 'acme' }),
        expect.objectContaining({ result: 'succeeded' }),
      ]),
    );
    const found = await auditor.get(`/v1/ops/audit?action=orphan.found&limit=200`);
    expect(found.body.items).toEqual(
      expect.arrayContaining([expect.objectContaining({ actor: 'hcp-orphans', target: { orphan_id: orphan.id } })]),
    );
  });

  it('gives a failed create its Proxmox VM back on adopt: the tenant sees the VM stopped, no longer in error', async () => {
    sim.addFault({
      kind: 'error',
      status: 500,
      message: "can't clone VM to node 'pve1' (VM uses local storage)",
      method: 'POST',
      path: /\/clone$/,
    });
    let vm: { resource_id: string; job_id: string };
    try {
      vm = await createVm('failed-create');
      expect((await jobFinished(tenant, 'acme', vm.job_id)).status).toBe('failed');
    } finally {
      sim.clearFaults();
    }
    expect((await tenant.get(`/v1/projects/acme/vms/${vm.resource_id}`)).body.status).toBe('error');
    // What a half-done create whose cleanup failed leaves at Proxmox.
    await makeVmAtProxmox(stack.driver, vm.resource_id, false);
    const orphan = await listedOrphan(stack, vm.resource_id);
    expect(orphan).toMatchObject({ hcp_record: 'failed_create', project_id: 'acme', actions: ['adopt', 'destroy'] });

    expect((await operator.post(`/v1/ops/orphans/${orphan.id}/adopt`)).status).toBe(403);
    const adopted = await infra.post(`/v1/ops/orphans/${orphan.id}/adopt`);
    expect(adopted.status).toBe(200);
    expect(adopted.body).toMatchObject({ id: orphan.id, status: 'adopted', actions: [] });
    const back = await eventually(async () => {
      const res = await tenant.get(`/v1/projects/acme/vms/${vm.resource_id}`);
      return res.body.status === 'stopped' ? res.body : undefined;
    }, 'VM stopped after adoption');
    expect(back).toMatchObject({ desired_state: 'stopped' });
    expect(sim.vmsByHcpId(vm.resource_id)).toHaveLength(1);
    // The tenant owns it again: it starts like any stopped VM.
    const start = await tenant.post(`/v1/projects/acme/vms/${vm.resource_id}/actions/start`, {});
    expect((await jobFinished(tenant, 'acme', start.body.job_id)).status).toBe('succeeded');

    const audit = await eventually(async () => {
      const res = await auditor.get(`/v1/ops/audit?action=orphan.adopt`);
      return res.body.items.find((r: { target: { orphan_id?: string } }) => r.target.orphan_id === orphan.id);
    }, 'audit of the adoption');
    expect(audit).toMatchObject({ actor: 'ingrid', result: 'succeeded', details: { vm_id: vm.resource_id } });
  });

  it('refuses to adopt an orphan HCP has no VM record for, with 409 saying to destroy it instead', async () => {
    const hcpId = randomUUID();
    await makeVmAtProxmox(stack.driver, hcpId, false);
    const orphan = await listedOrphan(stack, hcpId);
    expect(orphan).toMatchObject({ hcp_record: 'absent', project_id: null, actions: ['destroy'] });
    const refused = await infra.post(`/v1/ops/orphans/${orphan.id}/adopt`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'CONFLICT', details: { hcp_record: 'absent' } });
    expect(refused.body.error.message).toMatch(/destroy it instead/);
    expect(sim.vmsByHcpId(hcpId)).toHaveLength(1);
    expect((await infra.get(`/v1/ops/orphans/${orphan.id}`)).body.status).toBe('open');
  });

  it('clears an orphan once Proxmox no longer has it, and counts open orphans per provider in /metrics', async () => {
    const hcpId = randomUUID();
    await makeVmAtProxmox(stack.driver, hcpId, false);
    const orphan = await listedOrphan(stack, hcpId);
    await eventually(async () => {
      const text = String((await infra.get('/metrics')).body);
      const line = text.split('\n').find((l) => l.startsWith(`hcp_orphans{provider="${ids.provider}"}`));
      return line && Number(line.split(' ').pop()) >= 1 ? line : undefined;
    }, 'hcp_orphans gauge');
    await stack.driver.deleteVm(hcpId, {
      deadline: new Date(Date.now() + 30_000),
      signal: new AbortController().signal,
    });
    const cleared = await listedOrphan(stack, hcpId, 'cleared');
    expect(cleared.id).toBe(orphan.id);
  });
});

describe('orphans under HCP_ORPHAN_POLICY=destroy', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack({ HCP_ORPHAN_POLICY: 'destroy' });
  });

  afterAll(() => stopStack(stack));

  it('destroys each orphan when a later pass sees it again, audited as hcp-orphans, and leaves the VMs HCP has alone', async () => {
    const { sim, tenant, operator, auditor, ids } = stack;
    const created = await tenant.post('/v1/projects/acme/vms', {
      name: 'kept',
      zone: 'pve',
      image_id: ids.image,
      flavor_id: ids.flavor,
    });
    expect((await jobFinished(tenant, 'acme', created.body.job_id)).status).toBe('succeeded');
    const hcpId = randomUUID();
    await makeVmAtProxmox(stack.driver, hcpId, false);

    const destroyed = await listedOrphan(stack, hcpId, 'destroyed');
    expect(destroyed).toMatchObject({ hcp_record: 'absent', project_id: null, job_id: expect.any(String) });
    expect(sim.vmsByHcpId(hcpId)).toEqual([]);
    expect(sim.vmsByHcpId(created.body.resource_id)).toHaveLength(1);
    expect((await tenant.get(`/v1/projects/acme/vms/${created.body.resource_id}`)).body.status).toBe('running');
    // A job on an orphan without a VM record is in no tenant's project.
    const jobs = await operator.get(`/v1/ops/jobs?resource_id=${destroyed.id}`);
    expect(jobs.body.items).toEqual([
      expect.objectContaining({ type: 'orphan.destroy', project_id: '(ops)', status: 'succeeded' }),
    ]);
    expect(
      (await tenant.get('/v1/projects/acme/jobs?limit=200')).body.items.map((j: { type: string }) => j.type),
    ).not.toContain('orphan.destroy');

    const audit = await eventually(async () => {
      const res = await auditor.get('/v1/ops/audit?action=orphan.destroy&limit=200');
      const mine = res.body.items.filter(
        (r: { target: { orphan_id?: string } }) => r.target.orphan_id === destroyed.id,
      );
      return mine.some((r: { result: string }) => r.result === 'accepted') ? mine : undefined;
    }, 'audit of the policy destroy');
    expect(audit).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          actor: 'hcp-orphans',
          result: 'accepted',
          project_id: null,
          details: expect.objectContaining({ requested_by: 'policy' }),
        }),
      ]),
    );
  });
});
