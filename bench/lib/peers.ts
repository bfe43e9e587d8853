import { randomUUID } from 'node:crypto';
import { projections } from '@event-driven-io/emmett';
import { getPostgreSQLEventStore } from '@event-driven-io/emmett-postgresql';
import type { Client } from 'pg';
import type { QuotaEvent } from '../peers/emmett/quota';
import { vmProjection } from '../peers/emmett/vm-projection';
import { CREATE_VM_TABLE, VM_TABLE } from '../peers/emmett/vm-table';
import { freePort } from './hcp';
import { ManagedProcess, RssSampler } from './proc';
import type { CatalogRefs } from './seed';
import { seedVmReadModel, settle } from './seed';
import { log, sleep, waitFor } from './util';

/** The peers every write and read row is measured against (bench/peers/), in column order. */
export const PEERS = ['emmett', 'emmett_group'] as const;
export type PeerName = (typeof PEERS)[number];
export type PeerValues = Record<PeerName, number | null>;

export const noPeers = (): PeerValues => ({ emmett: null, emmett_group: null });

/** A running peer service: its URL, its process's RSS sampler, and the counters it reports on /ping. */
export interface PeerHandle {
  name: PeerName;
  url: string;
  process: ManagedProcess;
  rss: RssSampler;
  stats(): Promise<Record<string, unknown>>;
  /** Waits until the creates a load left behind (still retrying when its clients stopped) are answered. */
  idle(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Starts bench/peers/emmett/server.ts in one of its forms on a database (its schema is its own). */
export async function startPeer(name: PeerName, databaseUrl: string, script: string[]): Promise<PeerHandle> {
  const port = await freePort();
  const child = ManagedProcess.spawnNode(`peer-${name}`, script, {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    EMMETT_MODE: name,
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (!child.running) throw new Error(`peer ${name} exited:\n${child.logs}`);
    try {
      if ((await fetch(`${url}/ping`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`peer ${name} did not start:\n${child.logs}`);
    await sleep(100);
  }
  const rss = new RssSampler(child.pid).start();
  return {
    name,
    url,
    process: child,
    rss,
    stats: async () => (await (await fetch(`${url}/ping`)).json()) as Record<string, unknown>,
    idle: async (timeoutMs = 60_000) => {
      await waitFor(
        `peer ${name} to finish the creates in flight`,
        async () => ((await (await fetch(`${url}/ping`)).json()) as { inFlight: number }).inFlight === 0,
        timeoutMs,
        100,
      ).catch((err: Error) => log(err.message));
    },
    stop: async () => {
      rss.stop();
      await child.stop();
    },
  };
}

/**
 * VMs first..last of a project into the peer's projected table, with the same ids and documents the
 * HCP read model gets (seedVmReadModel into a scratch table of the same columns, then copied).
 */
export async function seedPeerVms(client: Client, project: string, first: number, last: number, refs: CatalogRefs) {
  await client.query(CREATE_VM_TABLE);
  await client.query(`CREATE TABLE IF NOT EXISTS vm_read_model (
    id uuid PRIMARY KEY, project_id text, name text, zone text, image_id text, flavor_id text, status text, desired_state text,
    addresses jsonb, tags jsonb, metadata jsonb, last_job_id uuid, created_at timestamptz, updated_at timestamptz,
    state jsonb, view text, position bigint)`);
  // A scratch copy, emptied below: only the peer's own table is settled.
  await seedVmReadModel(client, project, first, last, refs, { settled: false });
  await client.query(
    `INSERT INTO ${VM_TABLE} (id, project_id, document, created_at)
     SELECT id, project_id, state, created_at FROM vm_read_model ON CONFLICT (id) DO NOTHING`,
  );
  await client.query(`TRUNCATE vm_read_model`);
  await settle(client, VM_TABLE);
}

/**
 * A project that already holds `vms` VMs in the peer: its quota stream gets `vms` creations (and their
 * jobs) through Emmett's own append, so the inline projection sees them too.
 */
export async function seedPeerProject(databaseUrl: string, project: string, vms: number, refs: CatalogRefs) {
  const store = getPostgreSQLEventStore(databaseUrl, { projections: projections.inline([vmProjection]) });
  try {
    for (let done = 0; done < vms; ) {
      const n = Math.min(500, vms - done);
      const events: QuotaEvent[] = [];
      for (let i = 0; i < n; i++) {
        const vmId = randomUUID();
        const jobId = randomUUID();
        events.push(
          {
            type: 'VmCreationRequested',
            data: {
              vm_id: vmId,
              job_id: jobId,
              project_id: project,
              name: `seeded-${done + i}`,
              zone: 'local',
              image_id: refs.imageId,
              flavor_id: refs.flavorId,
              tags: {},
              resources: { vcpus: 1, ram_mb: 1024, disk_gb: 10 },
              requested_at: new Date().toISOString(),
            },
          },
          { type: 'JobQueued', data: { job_id: jobId, vm_id: vmId, project_id: project, type: 'vm.create' } },
        );
      }
      await store.appendToStream(`quota-${project}`, events);
      done += n;
    }
  } finally {
    await store.close();
  }
}
