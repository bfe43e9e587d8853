import { ProxmoxSimulator, SimLatency } from '../simulators/proxmox/proxmox-simulator';
import { ApiClient, ApiResponse, eventually } from './api-client';
import { HcpProcess } from './hcp-process';
import { createTestDatabase, TestDatabase } from './test-database';

/** What the Proxmox e2e suites differ in; everything else (zone `pve`, image `debian-12`) is the same for all. */
export interface ProxmoxStackOptions {
  latency: Partial<SimLatency>;
  /** HCP's environment on top of its defaults. */
  env: Record<string, string>;
  /** The provider's and the cluster's name. */
  name: string;
  providerSettings: Record<string, unknown>;
  placementHints: Record<string, unknown>;
  imageMinDiskGb: number;
  flavor: { vcpus: number; ram_mb: number; disk_gb: number };
}

export interface ProxmoxStack {
  sim: ProxmoxSimulator;
  /** Where the simulator answers and the CA and certificate fingerprint to trust it by. */
  pve: { url: string; caPem: string; fingerprint256: string };
  /** The API token HCP's provider was registered with. */
  token: { tokenId: string; secret: string };
  db: TestDatabase;
  hcp: HcpProcess;
  /** infra-admin: registered the provider and the cluster. */
  infra: ApiClient;
  /** cloud-operator: registered the zone, the image and the flavor. */
  operator: ApiClient;
  auditor: ApiClient;
  /** Admin of project `acme`. */
  tenant: ApiClient;
  /** HCP's answer to the provider's registration. */
  registeredProvider: ApiResponse;
  ids: { provider: string; cluster: string; image: string; flavor: string };
}

/**
 * The Proxmox simulator registered in a fresh HCP through the ops API (provider, cluster, zone `pve`,
 * image, flavor), returned once the tenant's catalog shows all three. A start that fails stops what it had
 * started, since the suite's afterAll gets no stack to stop.
 */
export async function startProxmoxStack(options: ProxmoxStackOptions): Promise<ProxmoxStack> {
  const sim = new ProxmoxSimulator({ latency: options.latency });
  let db: TestDatabase | undefined;
  let hcp: HcpProcess | undefined;
  try {
    const pve = await sim.start();
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: options.env });
    const infra = new ApiClient(hcp.baseUrl, hcp.token('ingrid', {}, ['infra-admin']));
    const operator = new ApiClient(hcp.baseUrl, hcp.token('olga', {}, ['cloud-operator']));
    const auditor = new ApiClient(hcp.baseUrl, hcp.token('sam', {}, ['security-auditor']));
    const tenant = new ApiClient(hcp.baseUrl, hcp.token('tina', { acme: 'admin' }));
    const { tokenId, secret } = sim.createToken();
    const provider = await infra.post('/v1/ops/providers', {
      name: options.name,
      type: 'proxmox',
      endpoint: pve.url,
      credentials: { token_id: tokenId, token_secret: secret },
      tls: { ca_pem: pve.caPem },
      settings: options.providerSettings,
    });
    expect(provider.status).toBe(201);
    const cluster = await infra.post('/v1/ops/clusters', {
      name: options.name,
      provider_id: provider.body.id,
      placement_hints: options.placementHints,
    });
    expect(cluster.status).toBe(201);
    const ids = { provider: provider.body.id, cluster: cluster.body.id, image: '', flavor: '' };
    expect(
      (await operator.post('/v1/ops/zones', { id: 'pve', name: 'PVE', cluster_ids: [ids.cluster], policy: 'spread' }))
        .status,
    ).toBe(201);
    const image = await operator.post('/v1/ops/images', {
      name: 'debian-12-pve',
      os: 'linux',
      min_disk_gb: options.imageMinDiskGb,
      min_ram_mb: 512,
      visibility: 'public',
      provider_refs: { [ids.cluster]: 'debian-12' },
    });
    ids.image = image.body.id;
    ids.flavor = (await operator.post('/v1/ops/flavors', { name: 'pve-small', ...options.flavor })).body.id;
    // The catalog read model follows the ops writes a moment later; a create naming an image it does not
    // have yet is refused as an unknown image_id (400), so wait for all three, not the zone alone.
    await eventually(async () => {
      const zones = (await tenant.get('/v1/zones')).body.items as Array<{ id: string }>;
      if (!zones.some((z) => z.id === 'pve')) return undefined;
      const image = await tenant.get(`/v1/images/${ids.image}`);
      const flavor = await tenant.get(`/v1/flavors/${ids.flavor}`);
      return image.status === 200 && flavor.status === 200 ? true : undefined;
    }, 'zone pve, its image and its flavor in the tenant catalog');
    return {
      sim,
      pve,
      token: { tokenId, secret },
      db,
      hcp,
      infra,
      operator,
      auditor,
      tenant,
      registeredProvider: provider,
      ids,
    };
  } catch (err) {
    await stopParts(sim, db, hcp);
    throw err;
  }
}

export async function stopProxmoxStack(stack: ProxmoxStack | undefined): Promise<void> {
  if (stack) await stopParts(stack.sim, stack.db, stack.hcp);
}

async function stopParts(sim: ProxmoxSimulator, db?: TestDatabase, hcp?: HcpProcess): Promise<void> {
  await hcp?.stop();
  hcp?.removeDataDir();
  await db?.drop();
  await sim.stop();
}
