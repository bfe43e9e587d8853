import { Logger } from '@nestjs/common';
import { HcpError } from '@hcp/domain';
import { eventContext } from '../platform/event-sourcing/event-context';
import { nameBasedId } from '../platform/event-sourcing/name-based-id';
import { OpsCatalogCommands, OpsCatalogQueries } from '../ops';

export const LOCAL_ZONE = 'local';
const SEED_ACTOR = 'hcp-seed';

/** A stable id for a seeded resource, so every install of the embedded default has the same ids. */
export const seededId = (kind: string, name: string): string => nameBasedId('hcp-seed', kind, name);

const IMAGES = [
  { name: 'ubuntu-24.04', os: 'linux', min_disk_gb: 8, min_ram_mb: 512 },
  { name: 'debian-12', os: 'linux', min_disk_gb: 4, min_ram_mb: 256 },
  { name: 'rocky-9', os: 'linux', min_disk_gb: 10, min_ram_mb: 1024 },
];

const FLAVORS = [
  { name: 'small', vcpus: 1, ram_mb: 1024, disk_gb: 10 },
  { name: 'medium', vcpus: 2, ram_mb: 4096, disk_gb: 40 },
  { name: 'large', vcpus: 4, ram_mb: 8192, disk_gb: 80 },
];

/**
 * The embedded default's simulator provider, its cluster, the zone `local`, and a few images and
 * flavors, registered through the same ops commands an operator uses (so they are events like any
 * other). Idempotent: ids are derived from names and an existing resource is left as it is.
 */
export async function seedEmbeddedDefault(commands: OpsCatalogCommands, queries: OpsCatalogQueries): Promise<void> {
  const ctx = () => eventContext(SEED_ACTOR, 'seed');
  const providerId = seededId('provider', 'local-simulator');
  const clusterId = seededId('cluster', 'local-simulator');
  await once(() =>
    commands.registerProvider(
      { name: 'local-simulator', type: 'simulator', endpoint: null, tls: {}, settings: {} },
      ctx(),
      providerId,
    ),
  );
  await once(() =>
    commands.registerCluster(
      {
        name: 'local-simulator',
        provider_id: providerId,
        placement_hints: {},
        capacity: null,
        enabled: true,
        capabilities: {},
      },
      ctx(),
      clusterId,
    ),
  );
  await once(() =>
    commands.createZone(LOCAL_ZONE, { name: 'Local', cluster_ids: [clusterId], policy: 'spread' }, ctx()),
  );
  for (const image of IMAGES) {
    await once(() =>
      commands.registerImage(
        { ...image, visibility: 'public', provider_refs: { [clusterId]: `template/${image.name}` } },
        ctx(),
        seededId('image', image.name),
      ),
    );
  }
  for (const flavor of FLAVORS) {
    await once(() => commands.registerFlavor({ ...flavor, extras: {} }, ctx(), seededId('flavor', flavor.name)));
  }
  await waitForReadModel(queries, clusterId);
}

/** Runs a registration; "exists already" (by id or by name) means an earlier start did it. */
async function once(register: () => Promise<unknown>): Promise<void> {
  try {
    await register();
  } catch (err) {
    if (!(err instanceof HcpError && err.code === 'CONFLICT')) throw err;
  }
}

/** Tenants should find the seeded catalog as soon as HCP answers; the projection needs a moment. */
async function waitForReadModel(queries: OpsCatalogQueries, clusterId: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [zone, flavor] = await Promise.all([
      queries.find('zone', LOCAL_ZONE),
      queries.find('flavor', seededId('flavor', 'large')),
    ]);
    if (zone?.spec.cluster_ids.includes(clusterId) && flavor) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  new Logger('seed').warn('the seeded catalog is not visible yet: is a process with the projections role running?');
}
