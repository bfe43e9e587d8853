import { ApiClient, eventually } from '../support/api-client';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, dumpDatabaseText, TestDatabase } from '../support/test-database';

const PASSWORD = 'Upd4te-PW-MARKER-91c2';
/** A closed port on loopback: the provider registers (its health says unreachable) without any I/O wait. */
const PVE_ENDPOINT = 'https://127.0.0.1:1';

/** An update stores only what a create of the same resource would accept (issue #13, defect 5). */
describe('ops updates validate like creates', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let infra: ApiClient;
  const ids = { pve: '', sim: '', cluster: '', image: '' };

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SEED_CATALOG: 'false' } });
    infra = new ApiClient(hcp.baseUrl, hcp.token('ingrid', {}, ['infra-admin', 'cloud-operator']));
    const pve = await infra.post('/v1/ops/providers', {
      name: 'pve',
      type: 'proxmox',
      endpoint: PVE_ENDPOINT,
      credentials: { api_token: 'hcp@pve!e2e=0b9f2c3e-5d1a-4c55-9a0e-0123456789ab' },
    });
    expect(pve.status).toBe(201);
    ids.pve = pve.body.id;
    const sim = await infra.post('/v1/ops/providers', { name: 'sim', type: 'simulator' });
    expect(sim.status).toBe(201);
    ids.sim = sim.body.id;
    const cluster = await infra.post('/v1/ops/clusters', {
      name: 'pve-a',
      provider_id: ids.pve,
      placement_hints: { storage: 'local-lvm' },
    });
    expect(cluster.status).toBe(201);
    ids.cluster = cluster.body.id;
    const image = await infra.post('/v1/ops/images', {
      name: 'debian',
      os: 'linux',
      min_disk_gb: 4,
      min_ram_mb: 512,
      visibility: 'public',
      provider_refs: { [ids.cluster]: 'debian-12' },
    });
    expect(image.status).toBe(201);
    ids.image = image.body.id;
    // GETs read the ops read model: wait until it holds the last registration (and so all before it).
    await eventually(async () => await imageNow(), 'the image in the ops read model');
  });

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  /** Ops read images from the list (there is no ops GET of one image). */
  const imageNow = async () =>
    (
      (await infra.get('/v1/ops/images')).body.items as Array<{ id: string; provider_refs: Record<string, string> }>
    ).find((i) => i.id === ids.image);

  const expectInvalid = (res: { status: number; body: any }, field: string) => {
    expect([res.status, res.body.error.code]).toEqual([400, 'INVALID_REQUEST']);
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
  };

  it.each([
    ['credentials in it', `https://root:${PASSWORD}@pve.example.test:8006`],
    ['plain http', 'http://pve.example.test:8006'],
  ])('refuses a provider endpoint with %s on update as on create, and stores nothing', async (_, endpoint) => {
    for (const id of [ids.pve, ids.sim]) {
      expectInvalid(await infra.patch(`/v1/ops/providers/${id}`, { endpoint }), 'endpoint');
    }
    expectInvalid(await infra.post('/v1/ops/providers', { name: 'sim-2', type: 'simulator', endpoint }), 'endpoint');
    expect((await infra.get(`/v1/ops/providers/${ids.pve}`)).body.endpoint).toBe(PVE_ENDPOINT);
    expect((await infra.get(`/v1/ops/providers/${ids.sim}`)).body.endpoint).toBeNull();
    expect(await dumpDatabaseText(db.url)).not.toContain(PASSWORD);
  });

  it('still applies a provider update a create would accept', async () => {
    const res = await infra.patch(`/v1/ops/providers/${ids.sim}`, { endpoint: 'https://sim.example.test' });
    expect(res.status).toBe(200);
    expect(res.body.endpoint).toBe('https://sim.example.test');
  });

  it('reads updated provider settings through the driver, as on create', async () => {
    expectInvalid(
      await infra.patch(`/v1/ops/providers/${ids.pve}`, { settings: { bridge: 'not a bridge!' } }),
      'settings.bridge',
    );
    expect((await infra.get(`/v1/ops/providers/${ids.pve}`)).body.settings ?? {}).not.toHaveProperty('bridge');
  });

  it('refuses cluster placement hints its driver cannot read, on create and on update alike', async () => {
    const hints = { storage: 'no such storage id!' };
    expectInvalid(
      await infra.post('/v1/ops/clusters', { name: 'pve-b', provider_id: ids.pve, placement_hints: hints }),
      'settings.storage',
    );
    expectInvalid(await infra.patch(`/v1/ops/clusters/${ids.cluster}`, { placement_hints: hints }), 'settings.storage');
    expect((await infra.get(`/v1/ops/clusters/${ids.cluster}`)).body.placement_hints).toEqual({ storage: 'local-lvm' });
    const ok = await infra.patch(`/v1/ops/clusters/${ids.cluster}`, { placement_hints: { storage: 'ceph-vm' } });
    expect([ok.status, ok.body.placement_hints]).toEqual([200, { storage: 'ceph-vm' }]);
  });

  it('refuses an image update naming an unknown cluster, and keeps the image as it was', async () => {
    const unknown = '7d0c1a52-6f43-4c0e-9d7a-5b1e2f3a4c5d';
    expectInvalid(
      await infra.patch(`/v1/ops/images/${ids.image}`, { provider_refs: { [unknown]: 'debian-12' } }),
      'provider_refs',
    );
    expect((await imageNow())?.provider_refs).toEqual({ [ids.cluster]: 'debian-12' });
  });
});
