import { randomUUID } from 'node:crypto';
import { ApiClient, ApiResponse, eventually, jobFinished } from '../support/api-client';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { describeWithVcsim, startVcsim, type Vcsim, type VcsimVm } from '../support/vcsim';

/**
 * HCP against "vCenter": vcsim (govmomi's vCenter simulator, test/support/vcsim.ts) registered as a
 * vSphere provider through the ops API, a tenant running a VM through its whole lifecycle, and vcsim's
 * own inventory (read inside vcsim through the vim25 API, never through HCP) showing the VM, its HCP
 * keys, its placement and its power state after each step. Faults come from vcsim's control endpoint.
 */
describeWithVcsim('vSphere provider end to end (vcsim)', () => {
  let sim: Vcsim;
  let db: TestDatabase;
  let hcp: HcpProcess;
  let infra: ApiClient;
  let operator: ApiClient;
  let tenant: ApiClient;
  let provider: ApiResponse;
  const ids = { provider: '', cluster: '', image: '', flavor: '' };

  // The cluster's placement: a resource pool, a folder and a datastore the VPX model does not have
  // until vcsim is told to add them, so a VM found there was put there by HCP's settings.
  const PLACEMENT = {
    resource_pool: '/DC0/host/DC0_C0/Resources/hcp',
    folder: '/DC0/vm/hcp/prod',
    datastore: 'LocalDS_1',
  };

  beforeAll(async () => {
    sim = await startVcsim({ datastores: 2, vmFolders: ['hcp/prod'], resourcePools: ['hcp'] });
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        HCP_JOB_MAX_ATTEMPTS: '2',
        HCP_JOB_RETRY_BACKOFF_MS: '50',
        // One driver call may take 8 s: the hang below ends there instead of at the default 10 min.
        HCP_JOB_ATTEMPT_TIMEOUT_MS: '8000',
        HCP_RECONCILE_INTERVAL_MS: '0',
      },
    });
    infra = new ApiClient(hcp.baseUrl, hcp.token('ingrid', {}, ['infra-admin']));
    operator = new ApiClient(hcp.baseUrl, hcp.token('olga', {}, ['cloud-operator']));
    tenant = new ApiClient(hcp.baseUrl, hcp.token('tina', { acme: 'admin' }));

    provider = await infra.post('/v1/ops/providers', {
      name: 'vc-lab',
      type: 'vsphere',
      endpoint: sim.sdkUrl,
      credentials: { username: sim.username, password: sim.password },
      tls: { ca_pem: sim.caPem },
      settings: { datacenter: 'DC0', shutdown_timeout_s: 5 },
    });
    expect(provider.status).toBe(201);
    ids.provider = provider.body.id;
    const cluster = await infra.post('/v1/ops/clusters', {
      name: 'vc-lab',
      provider_id: ids.provider,
      placement_hints: PLACEMENT,
    });
    expect(cluster.status).toBe(201);
    ids.cluster = cluster.body.id;
    expect(
      (
        await operator.post('/v1/ops/zones', {
          id: 'vc',
          name: 'vCenter',
          cluster_ids: [ids.cluster],
          policy: 'spread',
        })
      ).status,
    ).toBe(201);
    const image = await operator.post('/v1/ops/images', {
      name: 'vc-template',
      os: 'linux',
      min_disk_gb: 1,
      min_ram_mb: 512,
      visibility: 'public',
      // A VM of vcsim's model, cloned as a template is.
      provider_refs: { [ids.cluster]: 'DC0_C0_RP0_VM0' },
    });
    expect(image.status).toBe(201);
    ids.image = image.body.id;
    const flavor = await operator.post('/v1/ops/flavors', { name: 'vc-small', vcpus: 2, ram_mb: 2048, disk_gb: 10 });
    expect(flavor.status).toBe(201);
    ids.flavor = flavor.body.id;
    await eventually(async () => {
      const zones = (await tenant.get('/v1/zones')).body.items as Array<{ id: string }>;
      if (!zones.some((z) => z.id === 'vc')) return undefined;
      const img = await tenant.get(`/v1/images/${ids.image}`);
      const flv = await tenant.get(`/v1/flavors/${ids.flavor}`);
      return img.status === 200 && flv.status === 200 ? true : undefined;
    }, 'zone vc, its image and its flavor in the tenant catalog');
  }, 900_000);

  afterEach(() => sim?.clearFaults());

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
    await sim?.stop();
  });

  /** vcsim's VMs carrying this HCP id (by extraConfig) or named after it. */
  const atVcsim = async (vmId: string): Promise<VcsimVm[]> =>
    (await sim.inventory()).filter((vm) => vm.extra_config['hcp.id'] === vmId || vm.name === `hcp-${vmId}`);

  const settle = (vmId: string, status: string) =>
    eventually(async () => {
      const vm = (await tenant.get(`/v1/projects/acme/vms/${vmId}`)).body;
      return vm.status === status ? vm : undefined;
    }, `VM ${vmId} ${status}`);

  async function create(name: string): Promise<{ vmId: string; jobId: string }> {
    const res = await tenant.post('/v1/projects/acme/vms', {
      name,
      zone: 'vc',
      image_id: ids.image,
      flavor_id: ids.flavor,
      tags: { env: 'prod' },
    });
    expect(res.status).toBe(202);
    return { vmId: res.body.resource_id, jobId: res.body.job_id };
  }

  async function runningVm(name: string): Promise<string> {
    const { vmId, jobId } = await create(name);
    expect((await jobFinished(tenant, 'acme', jobId)).status).toBe('succeeded');
    await settle(vmId, 'running');
    return vmId;
  }

  async function action(vmId: string, verb: 'start' | 'stop' | 'reboot'): Promise<any> {
    const res = await tenant.post(`/v1/projects/acme/vms/${vmId}/actions/${verb}`, { force: false });
    expect(res.status).toBe(202);
    return jobFinished(tenant, 'acme', res.body.job_id, 60_000);
  }

  it('registers vCenter healthy, trusted by its CA; a pinned certificate thumbprint is enough too', async () => {
    expect(provider.body).toMatchObject({ type: 'vsphere', credentials_set: true, health: { status: 'healthy' } });
    expect(JSON.stringify(provider.body)).not.toContain(sim.password);
    const pinned = await infra.post('/v1/ops/providers', {
      name: 'vc-pinned',
      type: 'vsphere',
      endpoint: sim.sdkUrl,
      credentials: { username: sim.username, password: sim.password },
      tls: { fingerprint_sha256: sim.thumbprintSha256 },
    });
    expect([pinned.status, pinned.body.health?.status]).toEqual([201, 'healthy']);
    const wrongPin = await infra.post('/v1/ops/providers', {
      name: 'vc-wrong-pin',
      type: 'vsphere',
      endpoint: sim.sdkUrl,
      credentials: { username: sim.username, password: sim.password },
      tls: { fingerprint_sha256: 'ab'.repeat(32) },
    });
    expect(wrongPin.status).toBe(201);
    expect(wrongPin.body.health.status).not.toBe('healthy');
  });

  it('refuses a vSphere provider over plain http or without a password, naming the field, before any SOAP call', async () => {
    const callsBefore = await sim.calls();
    const plain = await infra.post('/v1/ops/providers', {
      name: 'vc-plain',
      type: 'vsphere',
      endpoint: sim.sdkUrl.replace('https:', 'http:'),
      credentials: { username: sim.username, password: sim.password },
    });
    expect([plain.status, plain.body.error.code]).toEqual([400, 'INVALID_REQUEST']);
    expect(JSON.stringify(plain.body.error.details)).toContain('endpoint');
    const noPassword = await infra.post('/v1/ops/providers', {
      name: 'vc-nopass',
      type: 'vsphere',
      endpoint: sim.sdkUrl,
      credentials: { username: sim.username },
      tls: { ca_pem: sim.caPem },
    });
    expect([noPassword.status, noPassword.body.error.code]).toEqual([400, 'INVALID_REQUEST']);
    expect(JSON.stringify(noPassword.body.error.details)).toContain('credentials.password');
    expect(await sim.calls()).toEqual(callsBefore);
  });

  it('runs the whole lifecycle, vcsim holding exactly the expected VM, placed as configured, at each step', async () => {
    const vmId = await runningVm('web-vc');

    const [vm] = await atVcsim(vmId);
    expect(await atVcsim(vmId)).toHaveLength(1);
    expect(vm).toMatchObject({
      name: `hcp-${vmId}`,
      power_state: 'poweredOn',
      template: false,
      folder: PLACEMENT.folder,
      resource_pool: PLACEMENT.resource_pool,
      num_cpu: 2,
      memory_mb: 2048,
    });
    expect(vm.extra_config).toMatchObject({
      'hcp.id': vmId,
      'hcp.project_id': 'acme',
      'hcp.name': 'web-vc',
      'hcp.cluster_id': ids.cluster,
    });
    expect(vm.datastores).toEqual([PLACEMENT.datastore]);

    for (const [verb, status, power] of [
      ['stop', 'stopped', 'poweredOff'],
      ['start', 'running', 'poweredOn'],
      ['reboot', 'running', 'poweredOn'],
    ] as const) {
      expect((await action(vmId, verb)).status).toBe('succeeded');
      await settle(vmId, status);
      expect((await atVcsim(vmId)).map((v) => v.power_state)).toEqual([power]);
    }

    const del = await tenant.delete(`/v1/projects/acme/vms/${vmId}`);
    expect(del.status).toBe(202);
    expect((await jobFinished(tenant, 'acme', del.body.job_id)).status).toBe('succeeded');
    expect(await atVcsim(vmId)).toEqual([]);
    // vcsim's own VMs are untouched by HCP.
    expect((await sim.inventory()).filter((v) => !v.name.startsWith('hcp-')).map((v) => v.name)).toEqual([
      'DC0_C0_RP0_VM0',
      'DC0_C0_RP0_VM1',
      'DC0_H0_VM0',
      'DC0_H0_VM1',
    ]);
  });

  it('removes the clone of a create whose power-on vCenter refuses, leaving nothing at vcsim', async () => {
    await sim.injectFault('PowerOnVM_Task', 'NoPermission');
    const { vmId, jobId } = await create('never-vc');
    const job = await jobFinished(tenant, 'acme', jobId, 60_000);
    expect(job).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'PROVIDER_UNAVAILABLE' } });
    await settle(vmId, 'error');
    expect(await atVcsim(vmId)).toEqual([]);
    expect((await sim.calls()).CloneVM_Task).toBeGreaterThanOrEqual(1);
  });

  it('retries a start that meets another task on the VM (TaskInProgress) and succeeds', async () => {
    const vmId = await runningVm('busy-vc');
    expect((await action(vmId, 'stop')).status).toBe('succeeded');
    await settle(vmId, 'stopped');
    const before = (await sim.calls()).PowerOnVM_Task ?? 0;
    await sim.injectFault('PowerOnVM_Task', 'TaskInProgress', 1);
    expect((await action(vmId, 'start')).status).toBe('succeeded');
    await settle(vmId, 'running');
    expect((await sim.calls()).PowerOnVM_Task - before).toBe(2);
    expect((await atVcsim(vmId)).map((v) => v.power_state)).toEqual(['poweredOn']);
  });

  it('fails a job with PROVIDER_TIMEOUT when vCenter stops answering, the VM untouched', async () => {
    const vmId = await runningVm('hung-vc');
    await sim.hang('PowerOffVM_Task');
    await sim.hang('ShutdownGuest');
    const res = await tenant.post(`/v1/projects/acme/vms/${vmId}/actions/stop`, { force: true });
    expect(res.status).toBe(202);
    const job = await jobFinished(tenant, 'acme', res.body.job_id, 90_000);
    expect(job).toMatchObject({ status: 'failed', error: { code: 'PROVIDER_TIMEOUT' } });
    await sim.clearFaults();
    expect((await atVcsim(vmId)).map((v) => v.power_state)).toEqual(['poweredOn']);
  });

  it('records a VM powered off in vCenter behind HCP’s back as stopped on reconcile', async () => {
    const vmId = await runningVm('drift-vc');
    await sim.setPowerState(`hcp-${vmId}`, 'poweredOff');
    const res = await operator.post(`/v1/ops/vms/${vmId}/reconcile`, undefined, { 'Idempotency-Key': randomUUID() });
    expect(res.status).toBe(202);
    expect(await jobFinished(tenant, 'acme', res.body.job_id)).toMatchObject({
      type: 'vm.reconcile',
      status: 'succeeded',
    });
    const vm = await settle(vmId, 'stopped');
    expect(vm.desired_state).toBe('stopped');
    expect((await atVcsim(vmId)).map((v) => v.power_state)).toEqual(['poweredOff']);
  });

  it('fails a job at once, without retries, when vCenter no longer accepts HCP’s credentials', async () => {
    const vmId = await runningVm('login-vc');
    // The session ends (the next call of any method is NotAuthenticated) and the new login is refused.
    await sim.injectFault('*', 'NotAuthenticated', 1);
    await sim.injectFault('Login', 'InvalidLogin');
    const job = await action(vmId, 'stop');
    expect(job).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'PROVIDER_UNAVAILABLE' } });
    expect(JSON.stringify(job)).not.toMatch(/InvalidLogin|administrator/);
    await sim.clearFaults();
    expect((await atVcsim(vmId)).map((v) => v.power_state)).toEqual(['poweredOn']);
  });
});
