import { DataSource } from 'typeorm';
import { Capabilities } from '@hcp/providers';
import { nameBasedId } from '../eventing/name-based-id';

export const LOCAL_ZONE = 'local';
export const LOCAL_PROVIDER_ID = 'simulator-local';
export const LOCAL_CLUSTER_ID = 'simulator-local-cluster';

/** A stable UUID for a seeded name, so every install of the embedded default has the same ids. */
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
 * Seeds the embedded default's zone `local` (backed by the simulator), images and flavors. Idempotent:
 * rows that exist are left as they are.
 */
export async function seedLocalCatalog(db: DataSource, capabilities: Capabilities): Promise<void> {
  await db.query(
    `INSERT INTO zones (id, name, provider_id, provider_type, cluster_id, capabilities) VALUES ($1, $2, $3, 'simulator', $4, $5)
     ON CONFLICT (id) DO NOTHING`,
    [LOCAL_ZONE, 'Local', LOCAL_PROVIDER_ID, LOCAL_CLUSTER_ID, JSON.stringify(capabilities)],
  );
  for (const image of IMAGES) {
    await db.query(
      `INSERT INTO images (id, name, os, min_disk_gb, min_ram_mb, visibility, provider_refs) VALUES ($1, $2, $3, $4, $5, 'public', $6)
       ON CONFLICT (name) DO NOTHING`,
      [seededId('image', image.name), image.name, image.os, image.min_disk_gb, image.min_ram_mb, JSON.stringify({ [LOCAL_CLUSTER_ID]: `template/${image.name}` })],
    );
  }
  for (const flavor of FLAVORS) {
    await db.query(
      `INSERT INTO flavors (id, name, vcpus, ram_mb, disk_gb) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING`,
      [seededId('flavor', flavor.name), flavor.name, flavor.vcpus, flavor.ram_mb, flavor.disk_gb],
    );
  }
}
