import { randomUUID } from 'node:crypto';
import { Client, escapeLiteral } from 'pg';
import { distribution, Distribution, sleep } from './util';
import type { CatalogRefs } from './seed';

interface Sample {
  position: bigint;
  /** clock_timestamp() of the database when the poll saw this position, in ms since the epoch. */
  atMs: number;
}

/**
 * Watches projection checkpoints on the database's own clock. A projection writes its rows and its
 * checkpoint in one transaction, so "checkpoint >= p" is exactly "the row for the event at position p
 * is visible". Comparing the first poll that saw it with the event's recorded_at (same clock) gives
 * the lag, over-stated by at most one poll interval plus the poll's own round trip.
 */
export class CheckpointPoller {
  private readonly samples = new Map<string, Sample[]>();
  private stopped = false;
  private loop: Promise<void> | null = null;
  private client: Client | null = null;

  constructor(
    private readonly url: string,
    private readonly names: string[],
    readonly everyMs = 5,
  ) {
    for (const name of names) this.samples.set(name, []);
  }

  async start(): Promise<void> {
    this.client = new Client({ connectionString: this.url, application_name: 'hcp-bench-poller' });
    await this.client.connect();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.client?.end();
  }

  /** The latest position seen of a checkpoint. */
  latest(name: string): bigint {
    return this.samples.get(name)!.at(-1)?.position ?? -1n;
  }

  /** Lag of each event (position, recorded at) until `name`'s checkpoint covered it; uncovered events are left out and counted. */
  lags(
    name: string,
    events: Array<{ position: bigint; recordedAtMs: number }>,
  ): { lag: Distribution; uncovered: number } {
    const samples = this.samples.get(name)!;
    const lags: number[] = [];
    let uncovered = 0;
    for (const e of events) {
      // first sample whose position covers the event (samples are in increasing position order)
      let lo = 0;
      let hi = samples.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (samples[mid]!.position >= e.position) hi = mid;
        else lo = mid + 1;
      }
      if (lo === samples.length) uncovered++;
      else lags.push(Math.max(0, samples[lo]!.atMs - e.recordedAtMs));
    }
    return { lag: distribution(lags), uncovered };
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const { rows } = await this.client!.query<{ name: string; position: string; at_ms: string }>(
        `SELECT name, position::text AS position, (extract(epoch FROM clock_timestamp()) * 1000)::text AS at_ms
         FROM projection_checkpoints WHERE name = ANY($1)`,
        [this.names],
      );
      for (const row of rows) {
        const list = this.samples.get(row.name)!;
        const position = BigInt(row.position);
        if (list.length === 0 || list.at(-1)!.position !== position) list.push({ position, atMs: Number(row.at_ms) });
      }
      await sleep(this.everyMs);
    }
  }
}

/** Events of streams with a prefix recorded since a time, as (position, recorded_at ms). */
export async function eventsSince(
  client: Client,
  prefix: string,
  sinceMs: number,
  untilMs: number,
): Promise<Array<{ position: bigint; recordedAtMs: number }>> {
  const { rows } = await client.query<{ position: string; at_ms: string }>(
    `SELECT position::text AS position, (extract(epoch FROM recorded_at) * 1000)::text AS at_ms FROM hcp_events
     WHERE starts_with(stream_id, $1) AND recorded_at >= to_timestamp($2::double precision / 1000) AND recorded_at < to_timestamp($3::double precision / 1000)
     ORDER BY position`,
    [prefix, sinceMs, untilMs],
  );
  return rows.map((r) => ({ position: BigInt(r.position), recordedAtMs: Number(r.at_ms) }));
}

export async function dbNowMs(client: Client): Promise<number> {
  const { rows } = await client.query<{ ms: string }>(
    `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::text AS ms`,
  );
  return Number(rows[0]!.ms);
}

/**
 * The event flow of `jobsPerSecond` create jobs, appended straight into hcp_events from one connection
 * (so position order and commit order agree, as the store's allocation lock ensures): every 10 ms, the
 * jobs due start (VmCreateRequested, JobQueued) and the jobs started in the previous tick finish
 * (JobStarted, VmProvisioned, JobSucceeded). Each tick is one transaction, followed by the NOTIFY the
 * store's CommitNotifier would send. Used to measure projections in isolation, without HCP's write path.
 */
export async function syntheticJobFlow(
  url: string,
  refs: CatalogRefs,
  jobsPerSecond: number,
  durationMs: number,
): Promise<{ jobs: number; events: number; ticksLate: number }> {
  const client = new Client({ connectionString: url, application_name: 'hcp-bench-synthetic-flow' });
  await client.connect();
  const TICK_MS = 10;
  const started = Date.now();
  let jobs = 0;
  let events = 0;
  let ticksLate = 0;
  let inFlight: Array<{ vm: string; job: string; project: string }> = [];
  try {
    for (let tick = 1; ; tick++) {
      const now = Date.now();
      const elapsed = now - started;
      const finishing = inFlight;
      inFlight = [];
      if (elapsed < durationMs) {
        const due = Math.floor((elapsed / 1000) * jobsPerSecond) - jobs;
        for (let i = 0; i < due; i++)
          inFlight.push({ vm: randomUUID(), job: randomUUID(), project: `p-${(jobs + i) % 100}` });
        jobs += Math.max(0, due);
      } else if (finishing.length === 0) {
        break;
      }
      const rows: string[] = [];
      const at = new Date().toISOString();
      const meta = escapeLiteral(
        JSON.stringify({ schema_version: 1, trace_id: 'bench-flow', actor: 'bench', occurred_at: at }),
      );
      const add = (stream: string, revision: number, type: string, data: unknown, id: string = randomUUID()) => {
        rows.push(
          `(${escapeLiteral(stream)}, ${revision}, ${escapeLiteral(id)}::uuid, ${escapeLiteral(type)}, ${escapeLiteral(JSON.stringify(data))}::jsonb, ${meta}::jsonb)`,
        );
      };
      for (const j of inFlight) {
        add(`vm-${j.vm}`, 0, 'VmCreateRequested', {
          vm_id: j.vm,
          project_id: j.project,
          job_id: j.job,
          name: `flow-${j.vm.slice(0, 8)}`,
          zone: 'local',
          image_id: refs.imageId,
          flavor_id: refs.flavorId,
          resources: { vcpus: 1, ram_mb: 1024, disk_gb: 10 },
          placement: { provider_id: refs.providerId, cluster_id: refs.clusterId, image_ref: 'template/debian-12' },
          tags: {},
          metadata: {},
          ssh_keys: [],
          power_on: true,
        });
        add(
          `job-${j.job}`,
          0,
          'JobQueued',
          {
            job_id: j.job,
            project_id: j.project,
            type: 'vm.create',
            resource_id: j.vm,
            trace_id: 'bench-flow',
            actor: 'bench',
            params: {},
          },
          j.job,
        );
      }
      for (const j of finishing) {
        add(`job-${j.job}`, 1, 'JobStarted', { attempt: 1, worker: 'bench' });
        add(`vm-${j.vm}`, 1, 'VmProvisioned', {
          job_id: j.job,
          power_state: 'running',
          addresses: [{ type: 'ipv4', address: '10.9.9.9', nic: 'net0' }],
          provider_ref: {},
        });
        add(`job-${j.job}`, 2, 'JobSucceeded', { attempt: 1 });
      }
      if (rows.length) {
        await client.query(
          `INSERT INTO hcp_events (stream_id, revision, event_id, type, data, metadata) VALUES ${rows.join(',\n')}`,
        );
        await client.query(`SELECT pg_notify('public_hcp_events', '')`);
        events += rows.length;
      }
      const next = started + tick * TICK_MS;
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      else ticksLate++;
    }
  } finally {
    await client.end();
  }
  return { jobs, events, ticksLate };
}
