import { type components, type HcpClient, listAll, unwrap } from '@hcp/client';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, dumpDatabaseText, queryDatabase, TestDatabase } from '../support/test-database';

const MARKER = 'Cr3d-MARKER-7f3a9c';
type CreateCluster = components['schemas']['CreateClusterDto'];

/** Ops register infrastructure through the API; tenants only ever see zones, images and flavors. */
describe('ops plane', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let infra: ApiClient;
  let ops: ApiClient;
  let tenant: ApiClient;
  // The same callers through @hcp/client, for the calls the API defines.
  const typed = {} as { infra: HcpClient; ops: HcpClient; tenant: HcpClient };
  const ids = { provider: '', big: '', small: '', noReboot: '', image: '', flavor: '' };

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({
      databaseUrl: db.url,
      env: { HCP_SIMULATOR_LATENCY_SCALE: '0', LOG_LEVEL: 'debug' },
    });
    infra = new ApiClient(hcp.baseUrl, hcp.token('ingrid', {}, ['infra-admin']));
    ops = new ApiClient(hcp.baseUrl, hcp.token('otto', {}, ['cloud-operator']));
    tenant = new ApiClient(hcp.baseUrl, hcp.token('tina', { acme: 'admin' }));
    Object.assign(typed, { infra: infra.typed(), ops: ops.typed(), tenant: tenant.typed() });
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  it('registers a provider with write-only credentials and checks it at once', async () => {
    const res = await typed.infra.POST('/v1/ops/providers', {
      body: {
        name: 'lab-sim',
        type: 'simulator',
        credentials: { user: 'root@pam', password: MARKER },
        settings: { latency_scale: 0 },
      },
    });
    expect(res.response.status).toBe(201);
    const provider = unwrap(res);
    expect(provider).toMatchObject({
      name: 'lab-sim',
      type: 'simulator',
      credentials_set: true,
      health: { status: 'healthy' },
    });
    expect(JSON.stringify(provider)).not.toContain(MARKER);
    ids.provider = provider.id;
    const check = await typed.infra.POST('/v1/ops/providers/{id}/check', { params: { path: { id: ids.provider } } });
    expect(unwrap(check).status).toBe('healthy');
    const dup = await typed.infra.POST('/v1/ops/providers', { body: { name: 'lab-sim', type: 'simulator' } });
    expect([dup.response.status, dup.error?.error.code]).toEqual([409, 'CONFLICT']);
  });

  it('refuses provider types without a driver in this release', async () => {
    const res = await typed.infra.POST('/v1/ops/providers', {
      body: { name: 'hv', type: 'hyperv', endpoint: 'https://hyperv.example.test' },
    });
    expect([res.response.status, res.error?.error.code]).toEqual([422, 'FEATURE_NOT_SUPPORTED']);
  });

  it('registers clusters, a zone, an image and a flavor, and a tenant VM lands on the cluster placement chose', async () => {
    const cluster = async (name: string, extra: Omit<CreateCluster, 'name' | 'provider_id'>) => {
      const res = await typed.infra.POST('/v1/ops/clusters', { body: { name, provider_id: ids.provider, ...extra } });
      expect(res.response.status).toBe(201);
      return unwrap(res).id;
    };
    ids.big = await cluster('big', {
      capacity: { vcpus: 64, ram_mb: 262144, disk_gb: 10000 },
      placement_hints: { pool: 'gold' },
    });
    ids.small = await cluster('small', { capacity: { vcpus: 4, ram_mb: 8192, disk_gb: 200 } });
    ids.noReboot = await cluster('no-reboot', { capabilities: { reboot: false } });
    for (const zone of [
      { id: 'eu-1', name: 'EU 1', cluster_ids: [ids.big, ids.small], policy: 'spread' },
      { id: 'eu-pack', name: 'EU pack', cluster_ids: [ids.big, ids.small], policy: 'pack' },
      { id: 'legacy', name: 'Legacy', cluster_ids: [ids.noReboot], policy: 'spread' },
    ] as const)
      expect(
        (await typed.ops.POST('/v1/ops/zones', { body: { ...zone, cluster_ids: [...zone.cluster_ids] } })).response
          .status,
      ).toBe(201);
    const image = await typed.ops.POST('/v1/ops/images', {
      body: {
        name: 'alma-9',
        os: 'linux',
        min_disk_gb: 10,
        min_ram_mb: 1024,
        visibility: 'public',
        provider_refs: {
          [ids.big]: 'tmpl/alma-big',
          [ids.small]: 'tmpl/alma-small',
          [ids.noReboot]: 'tmpl/alma-legacy',
        },
      },
    });
    expect(image.response.status).toBe(201);
    ids.image = unwrap(image).id;
    const flavor = await typed.ops.POST('/v1/ops/flavors', {
      body: { name: 'm1', vcpus: 2, ram_mb: 2048, disk_gb: 20 },
    });
    expect(flavor.response.status).toBe(201);
    ids.flavor = unwrap(flavor).id;

    const allOf = async <T>(items: AsyncIterable<T>) => {
      const all: T[] = [];
      for await (const item of items) all.push(item);
      return all;
    };
    const zones = await eventually(async () => {
      const items = await allOf(listAll(typed.tenant, '/v1/zones', {}));
      return items.some((z) => z.id === 'legacy') ? items : undefined;
    }, 'zones visible to tenants');
    expect(zones.find((z) => z.id === 'legacy')!.capabilities.reboot).toBe(false);
    expect(zones.find((z) => z.id === 'eu-1')!.capabilities.reboot).toBe(true);
    expect(JSON.stringify(zones).replace(/"capabilities":\{[^}]*\}/g, '')).not.toMatch(/cluster|provider|tmpl|gold/);
    // Creates are checked against the catalog read model, which got the image and flavor after the zones:
    // wait until tenants see both, or a create below is refused as naming an unknown image or flavor.
    await eventually(
      async () =>
        (await allOf(listAll(typed.tenant, '/v1/images', {}))).some((x) => x.id === ids.image) ? true : undefined,
      'images visible to tenants',
    );
    await eventually(
      async () =>
        (await allOf(listAll(typed.tenant, '/v1/flavors', {}))).some((x) => x.id === ids.flavor) ? true : undefined,
      'flavors visible to tenants',
    );

    const place = async (zone: string, name: string) => {
      const res = await typed.tenant.POST('/v1/projects/{project_id}/vms', {
        params: { path: { project_id: 'acme' } },
        body: { name, zone, image_id: ids.image, flavor_id: ids.flavor },
      });
      expect(res.response.status).toBe(202);
      const { resource_id, job_id } = unwrap(res);
      expect((await jobFinished(typed.tenant, 'acme', job_id)).status).toBe('succeeded');
      const [row] = await queryDatabase<{ cluster_id: string; image_ref: string }>(
        db.url,
        'SELECT cluster_id, image_ref FROM simulator.vms WHERE hcp_id = $1',
        [resource_id],
      );
      return { vm: resource_id, ...row };
    };
    // spread: the cluster with the most free memory; pack: the fullest one that still fits.
    expect(await place('eu-1', 'spread-1')).toMatchObject({ cluster_id: ids.big, image_ref: 'tmpl/alma-big' });
    expect(await place('eu-pack', 'pack-1')).toMatchObject({ cluster_id: ids.small, image_ref: 'tmpl/alma-small' });
  });

  it('resolves each create against the flavor as it is now, also right after it changed', async () => {
    const shop = new ApiClient(hcp.baseUrl, hcp.token('fay', { flv: 'admin' }));
    const create = (name: string) =>
      shop.post('/v1/projects/flv/vms', { name, zone: 'eu-1', image_id: ids.image, flavor_id: flavor });
    // Not just any refusal of the flavor: an unknown one (the read model has not got it yet) is refused too.
    const tooSmall = (res: {
      body: { error?: { code: string; details?: { fields?: Array<{ field: string }>; min_ram_mb?: number } } };
    }) =>
      res.body.error?.code === 'INVALID_REQUEST' &&
      res.body.error.details?.fields?.[0]?.field === 'flavor_id' &&
      res.body.error.details.min_ram_mb === 1024;
    // Smaller than the image needs (alma-9 wants 1,024 MB): refused, and the catalog read for it is now remembered.
    const made = await ops.post('/v1/ops/flavors', { name: 'shrinking', vcpus: 1, ram_mb: 512, disk_gb: 20 });
    expect(made.status).toBe(201);
    const flavor = made.body.id as string;
    await eventually(
      async () => (tooSmall(await create('early')) ? true : undefined),
      'the new flavor refused as too small',
    );

    expect((await ops.patch(`/v1/ops/flavors/${flavor}`, { ram_mb: 2048 })).status).toBe(200);
    await eventually(
      async () => ((await create(`grown-${Date.now()}`)).status === 202 ? true : undefined),
      'the grown flavor accepted',
      5000,
    );

    expect((await ops.patch(`/v1/ops/flavors/${flavor}`, { ram_mb: 512 })).status).toBe(200);
    await eventually(
      async () => (tooSmall(await create('shrunk')) ? true : undefined),
      'the shrunk flavor refused again',
      5000,
    );
  });

  it('refuses what the zone cannot do with FEATURE_NOT_SUPPORTED naming the capability', async () => {
    const res = await tenant.post('/v1/projects/acme/vms', {
      name: 'old-1',
      zone: 'legacy',
      image_id: ids.image,
      flavor_id: ids.flavor,
    });
    await jobFinished(tenant, 'acme', res.body.job_id);
    await eventually(
      async () =>
        (await tenant.get(`/v1/projects/acme/vms/${res.body.resource_id}`)).body.status === 'running'
          ? true
          : undefined,
      'running',
    );
    const reboot = await tenant.post(`/v1/projects/acme/vms/${res.body.resource_id}/actions/reboot`, {});
    expect(reboot.status).toBe(422);
    expect(reboot.body.error).toMatchObject({ code: 'FEATURE_NOT_SUPPORTED', details: { missing: ['reboot'] } });
    expect(
      (await tenant.post(`/v1/projects/acme/vms/${res.body.resource_id}/actions/stop`, { force: true })).status,
    ).toBe(202);
  });

  it('fails a create at once when no cluster of the zone can take it', async () => {
    expect((await infra.patch(`/v1/ops/clusters/${ids.noReboot}`, { enabled: false })).status).toBe(200);
    const res = await eventually(
      async () => {
        const r = await tenant.post('/v1/projects/acme/vms', {
          name: 'nowhere',
          zone: 'legacy',
          image_id: ids.image,
          flavor_id: ids.flavor,
        });
        return r.status === 503 ? r : undefined;
      },
      'the disabled cluster to be refused',
      5000,
    );
    expect(res.body.error).toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
      details: { zone: 'legacy', reasons: { disabled: 1 } },
    });
  });

  it('refuses to delete what is in use', async () => {
    expect((await ops.delete(`/v1/ops/images/${ids.image}`)).status).toBe(409);
    expect((await infra.delete(`/v1/ops/clusters/${ids.big}`)).status).toBe(409);
    expect((await infra.delete(`/v1/ops/providers/${ids.provider}`)).status).toBe(409);
  });

  it('lists VMs and jobs across projects for ops only', async () => {
    const vms = await ops.get('/v1/ops/vms?project=acme&limit=200');
    expect(vms.status).toBe(200);
    expect(vms.body.items.length).toBeGreaterThanOrEqual(3);
    expect(vms.body.items[0].placement.cluster_id).toEqual(expect.any(String));
    expect((await ops.get('/v1/ops/jobs')).status).toBe(200);
    for (const path of ['/v1/ops/vms', '/v1/ops/jobs', '/v1/ops/providers', '/v1/ops/zones']) {
      const res = await tenant.get(path);
      expect([path, res.status, res.body.error.code]).toEqual([path, 403, 'FORBIDDEN']);
    }
    expect((await ops.post('/v1/ops/providers', { name: 'x', type: 'simulator' })).status).toBe(403);
  });

  it('enforces quotas race-free: 20 concurrent creates against 5 instances accept exactly 5', async () => {
    const set = await typed.ops.PUT('/v1/ops/projects/{project_id}/quotas', {
      params: { path: { project_id: 'quota-race' } },
      body: { instances: 5, vcpus: 100, ram_mb: 1_000_000, disk_gb: 100_000 },
    });
    expect(set.response.status).toBe(200);
    expect(unwrap(set)).toMatchObject({ project_id: 'quota-race', limits: { instances: 5 }, usage: { instances: 0 } });
    const racer = new ApiClient(hcp.baseUrl, hcp.token('rita', { 'quota-race': 'admin' }));
    const racing = racer.typed();
    const quotaRace = { path: { project_id: 'quota-race' } };
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        racing
          .POST('/v1/projects/{project_id}/vms', {
            params: quotaRace,
            body: { name: `q-${i}`, zone: 'eu-1', image_id: ids.image, flavor_id: ids.flavor },
          })
          .then(({ data, error, response }) => ({ status: response.status, body: data, error })),
      ),
    );
    expect(answers.filter((a) => a.status === 202)).toHaveLength(5);
    const refused = answers.filter((a) => a.status !== 202);
    expect(refused).toHaveLength(15);
    for (const r of refused)
      expect(r.error?.error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { resource: 'instances', limit: 5 } });
    const quota = await eventually(async () => {
      const q = unwrap(await racing.GET('/v1/projects/{project_id}/quotas', { params: quotaRace }));
      return q.usage.instances === 5 ? q : undefined;
    }, 'usage of 5 instances');
    expect(quota.usage).toEqual({ instances: 5, vcpus: 10, ram_mb: 10240, disk_gb: 100 });

    // Deleting a VM gives its share back (from the events, through the quota-release projection).
    const victim = answers.find((a) => a.status === 202)!.body!;
    await jobFinished(racer, 'quota-race', victim.job_id);
    await eventually(
      async () =>
        (await racer.get(`/v1/projects/quota-race/vms/${victim.resource_id}`)).body.status === 'running'
          ? true
          : undefined,
      'running',
    );
    const del = await racer.delete(`/v1/projects/quota-race/vms/${victim.resource_id}`);
    await jobFinished(racer, 'quota-race', del.body.job_id);
    await eventually(
      async () => ((await racer.get('/v1/projects/quota-race/quotas')).body.usage.instances === 4 ? true : undefined),
      'usage back to 4',
    );
    expect(
      (
        await racer.post('/v1/projects/quota-race/vms', {
          name: 'q-after',
          zone: 'eu-1',
          image_id: ids.image,
          flavor_id: ids.flavor,
        })
      ).status,
    ).toBe(202);
  });

  it('never lets a credential reach an answer, a log line, an event or a database row in clear', async () => {
    const updated = await infra.patch(`/v1/ops/providers/${ids.provider}`, {
      credentials: { user: 'root@pam', password: `${MARKER}-rotated` },
    });
    expect(updated.status).toBe(200);
    const answers = [
      updated,
      await infra.get(`/v1/ops/providers/${ids.provider}`),
      await infra.get('/v1/ops/providers'),
      await ops.get('/v1/ops/vms'),
    ];
    for (const res of answers) expect(JSON.stringify(res.body)).not.toContain(MARKER);
    expect(hcp.logs).not.toContain(MARKER);
    const events = await queryDatabase(db.url, `SELECT data::text, metadata::text FROM hcp_events`);
    expect(JSON.stringify(events)).not.toContain(MARKER);
    const dump = await dumpDatabaseText(db.url);
    expect(dump).toContain('-- public.provider_credentials');
    expect(dump).toMatch(/aes-256-gcm/i);
    expect(dump).not.toContain(MARKER);
  });
});
