import { Client } from 'pg';
import { runNode } from './proc';
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
 * The synthetic event flow of bench/children/synthetic-flow.ts, run as a process of its own so that
 * appending it never shares an event loop or a CPU budget with the harness's checkpoint poller.
 */
export async function syntheticJobFlow(
  script: string[],
  url: string,
  refs: CatalogRefs,
  jobsPerSecond: number,
  durationMs: number,
): Promise<{ jobs: number; events: number; ticksLate: number }> {
  const out = await runNode([...script, url, JSON.stringify(refs), String(jobsPerSecond), String(durationMs)]);
  return JSON.parse(out.trim().split('\n').pop()!) as { jobs: number; events: number; ticksLate: number };
}
