import { ProxmoxSimulator } from '../simulators/proxmox/proxmox-simulator';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { ProxmoxStack, startProxmoxStack, stopProxmoxStack } from '../support/proxmox-stack';
import { queryDatabase, TestDatabase } from '../support/test-database';

/**
 * What a create leaves at Proxmox when it goes wrong, through HCP's jobs: a create that fails for good
 * removes its half-made VM (or says in the VM's failure that it could not), and a create whose clone
 * answer was lost takes over that clone on its next attempt through the VMID the job recorded.
 */
describe('Proxmox creates that go wrong, end to end', () => {
  let stack: ProxmoxStack;
  let sim: ProxmoxSimulator;
  let db: TestDatabase;
  let tenant: ApiClient;
  let ids: ProxmoxStack['ids'];

  beforeAll(async () => {
    stack = await startProxmoxStack({
      // Full clones take 1.2 s: long enough for an attempt of 1 s to end inside the clone's lock window.
      latency: { scale: 0.02, cloneFullMs: 60_000 },
      env: {
        HCP_JOB_MAX_ATTEMPTS: '5',
        HCP_JOB_RETRY_BACKOFF_MS: '50',
        HCP_JOB_ATTEMPT_TIMEOUT_MS: '1000',
        HCP_JOB_LEASE_MS: '6000',
      },
      name: 'pve-lab',
      providerSettings: { bridge: 'vmbr0', address_wait_s: 0, full_clone: true, storage: 'local-lvm' },
      placementHints: { nodes: ['pve1'] },
      imageMinDiskGb: 2,
      flavor: { vcpus: 1, ram_mb: 1024, disk_gb: 2 },
    });
    ({ sim, db, tenant, ids } = stack);
  });

  afterEach(() => sim?.clearFaults());

  afterAll(() => stopProxmoxStack(stack));

  const history = async (streamId: string) =>
    (
      await queryDatabase<{ type: string; data: Record<string, unknown> }>(
        db.url,
        'SELECT type, data FROM hcp_events WHERE stream_id = $1 ORDER BY revision',
        [streamId],
      )
    ).map((e) => ({ ...e.data, type: e.type }));

  /** The cause the VM recorded for its failed create. */
  const failureOf = async (vmId: string) =>
    (await history(`vm-${vmId}`)).find((e) => e.type === 'VmOperationFailed') as
      | { error: { code: string; details?: Record<string, unknown> }; status_after: string }
      | undefined;

  async function create(name: string): Promise<{ vmId: string; jobId: string }> {
    const res = await tenant.post('/v1/projects/acme/vms', {
      name,
      zone: 'pve',
      image_id: ids.image,
      flavor_id: ids.flavor,
    });
    expect(res.status).toBe(202);
    return { vmId: res.body.resource_id, jobId: res.body.job_id };
  }

  const settled = (vmId: string, status: string) =>
    eventually(async () => {
      const vm = (await tenant.get(`/v1/projects/acme/vms/${vmId}`)).body;
      return vm.status === status ? vm : undefined;
    }, `VM ${status}`);

  it('removes the VM of a create whose start task fails, and leaves the VM in error with the cause', async () => {
    sim.addFault({
      kind: 'task-fail',
      message: 'start failed: QEMU exited with code 1',
      method: 'POST',
      path: /\/status\/start$/,
    });
    const { vmId, jobId } = await create('start-fails');

    const job = await jobFinished(tenant, 'acme', jobId);
    expect(job).toMatchObject({ status: 'failed', error: { code: 'PROVIDER_UNAVAILABLE' } });
    await settled(vmId, 'error');

    expect(sim.vmsByHcpId(vmId)).toEqual([]);
    expect(sim.listVms().filter((v) => v.name === `hcp-${vmId}`)).toEqual([]);
    expect(await failureOf(vmId)).toMatchObject({
      status_after: 'error',
      error: { code: 'PROVIDER_UNAVAILABLE', details: { cleanup: 'removed' } },
    });
    // A clone, a start that failed on each attempt, then the removal.
    expect(sim.requests.filter((r) => r.method === 'DELETE' && r.path.includes(`/qemu/`)).length).toBeGreaterThan(0);
    expect(sim.validationFailures).toEqual([]);
  });

  it('says in the VM’s failure that the removal failed, and why, when Proxmox refuses it', async () => {
    sim.addFault({
      kind: 'task-fail',
      message: 'start failed: QEMU exited with code 1',
      method: 'POST',
      path: /\/status\/start$/,
    });
    sim.addFault({ kind: 'error', status: 500, message: 'storage local-lvm is not online', method: 'DELETE' });
    const { vmId, jobId } = await create('cleanup-fails');

    expect((await jobFinished(tenant, 'acme', jobId)).status).toBe('failed');
    await settled(vmId, 'error');

    expect(sim.vmsByHcpId(vmId)).toHaveLength(1);
    const failure = await failureOf(vmId);
    expect(failure?.error.details).toMatchObject({
      cleanup: 'failed',
      cleanup_error: { code: 'PROVIDER_UNAVAILABLE' },
    });
    // The half-made VM stays for the orphan list (reconcile) or the tenant's delete.
    sim.clearFaults();
    const del = await tenant.delete(`/v1/projects/acme/vms/${vmId}`);
    expect((await jobFinished(tenant, 'acme', del.body.job_id)).status).toBe('succeeded');
    expect(sim.vmsByHcpId(vmId)).toEqual([]);
  });

  it('takes over, on its next attempt, the clone whose answer was lost, through the VMID the job recorded', async () => {
    sim.addFault({ kind: 'drop-after', method: 'POST', path: /\/clone$/, times: 1 });
    const clonesBefore = sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/clone')).length;
    const { vmId, jobId } = await create('clone-lost');

    const job = await jobFinished(tenant, 'acme', jobId);
    expect(job.status).toBe('succeeded');
    // The first attempt ran out of time in the clone's lock window, after the clone's answer was lost.
    expect(job.attempts).toBeGreaterThanOrEqual(2);
    await settled(vmId, 'running');

    expect(sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/clone')).length - clonesBefore).toBe(1);
    const [pve] = sim.vmsByHcpId(vmId);
    expect(sim.vmsByHcpId(vmId)).toHaveLength(1);
    const jobEvents = await history(`job-${jobId}`);
    expect(jobEvents.filter((e) => e.type === 'JobFactRecorded')).toEqual([
      { type: 'JobFactRecorded', attempt: 1, key: 'proxmox.clone', value: { node: pve.node, vmid: pve.vmid } },
    ]);
    // Facts are internal: the job answer does not show them.
    expect(JSON.stringify(job)).not.toContain('proxmox.clone');
    expect(JSON.stringify((await tenant.get(`/v1/projects/acme/jobs/${jobId}`)).body)).not.toContain(String(pve.vmid));
    const [row] = await queryDatabase<{ state: string }>(
      db.url,
      'SELECT state::text FROM job_read_model WHERE id = $1',
      [jobId],
    );
    expect(row.state).toContain('"succeeded"');
    expect(row.state).not.toContain('proxmox.clone');
  });
});
