import type { Client } from 'pg';
import { sleep } from './util';

/** Jobs queued and finished so far, from the event store itself (not a read model that may lag). */
export async function jobCounts(client: Client): Promise<{ queued: number; finished: number }> {
  const { rows } = await client.query<{ queued: string; finished: string }>(
    `SELECT count(*) FILTER (WHERE type = 'JobQueued')::text AS queued,
            count(*) FILTER (WHERE type IN ('JobSucceeded', 'JobFailed'))::text AS finished
     FROM hcp_events WHERE starts_with(stream_id, 'job-')`,
  );
  return { queued: Number(rows[0]!.queued), finished: Number(rows[0]!.finished) };
}

/**
 * Waits until every job requested so far has finished (and at least `atLeast` were queued). Returns
 * the seconds it took, or null on timeout.
 */
export async function waitForJobsDrained(
  client: Client,
  atLeast: number,
  timeoutS: number,
): Promise<{ seconds: number | null; queued: number; finished: number }> {
  const started = Date.now();
  for (;;) {
    const counts = await jobCounts(client);
    if (counts.queued >= atLeast && counts.finished >= counts.queued)
      return { seconds: (Date.now() - started) / 1000, ...counts };
    if (Date.now() - started > timeoutS * 1000) return { seconds: null, ...counts };
    await sleep(100);
  }
}

export interface JobTiming {
  queuedMs: number;
  startedMs: number | null;
  succeededMs: number;
  succeededPosition: bigint;
}

/** Each job queued in [fromMs, toMs) that succeeded: when it was queued, started and succeeded (recorded_at). */
export async function jobTimings(client: Client, fromMs: number, toMs: number): Promise<JobTiming[]> {
  const { rows } = await client.query<{ queued: string; started: string | null; succeeded: string; position: string }>(
    `SELECT (extract(epoch FROM q.recorded_at) * 1000)::text AS queued,
            (SELECT (extract(epoch FROM min(st.recorded_at)) * 1000)::text FROM hcp_events st WHERE st.stream_id = q.stream_id AND st.type = 'JobStarted') AS started,
            (extract(epoch FROM s.recorded_at) * 1000)::text AS succeeded, s.position::text AS position
     FROM hcp_events q JOIN hcp_events s ON s.stream_id = q.stream_id AND s.type = 'JobSucceeded'
     WHERE q.type = 'JobQueued' AND starts_with(q.stream_id, 'job-')
       AND q.recorded_at >= to_timestamp($1::double precision / 1000) AND q.recorded_at < to_timestamp($2::double precision / 1000)`,
    [fromMs, toMs],
  );
  return rows.map((r) => ({
    queuedMs: Number(r.queued),
    startedMs: r.started === null ? null : Number(r.started),
    succeededMs: Number(r.succeeded),
    succeededPosition: BigInt(r.position),
  }));
}
