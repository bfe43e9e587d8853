/**
 * The baseline of the projections: the least a VM read model projector can do on the same event table.
 * One loop on one connection: read up to 500 `vm-` events above its checkpoint (below the oldest
 * transaction in flight, as HCP's reader), fold them with the domain's own evolveVm (pure, no I/O),
 * load the rows it touches and upsert them (every column toRow writes, into a table LIKE vm_read_model
 * INCLUDING ALL, so the same indexes) with the checkpoint in one transaction, via plain pg and
 * hand-written SQL. No Nest, no TypeORM, no subscription or runner machinery. Wakes on the store's
 * NOTIFY and polls every 5 ms besides (a floor: it never waits for a late transaction longer than that).
 *
 * Usage: node scripts/ts-run.js bench/baseline/projector.ts <database url> [stop-at-position] (run.ts runs a
 * compiled copy).
 * It writes bench_baseline_vm_rows and the checkpoint `baseline-vm` in projection_checkpoints. With a
 * stop position it exits once past it and prints {"seconds": ...}.
 */
import { Client } from 'pg';
// A relative import, so the compiled copy (bench/.build/bench/baseline) uses the compiled domain code.
import { evolveVm, VmEvent, VmState } from '../../libs/domain/src';
import { presentVm } from '../../projections/vm-read-model/vm-view';

const NAME = 'baseline-vm';
const PAGE = 500;

async function main(): Promise<void> {
  const [url, stopAtText] = process.argv.slice(2);
  const stopAt = stopAtText ? BigInt(stopAtText) : null;
  const db = new Client({ connectionString: url, application_name: 'hcp-bench-baseline-projector' });
  await db.connect();
  // The read model's own shape and indexes, so the database does the same work as for vm_read_model.
  await db.query(`CREATE TABLE IF NOT EXISTS bench_baseline_vm_rows (LIKE vm_read_model INCLUDING ALL)`);
  await db.query(
    `INSERT INTO projection_checkpoints (name, position, updated_at) VALUES ($1, -1, now()) ON CONFLICT (name) DO NOTHING`,
    [NAME],
  );
  let checkpoint = BigInt(
    (await db.query(`SELECT position::text AS p FROM projection_checkpoints WHERE name = $1`, [NAME])).rows[0].p,
  );

  const listener = new Client({ connectionString: url, application_name: 'hcp-bench-baseline-listen' });
  await listener.connect();
  let pending = false;
  let wake: (() => void) | null = null;
  listener.on('notification', () => {
    pending = true;
    wake?.();
  });
  await listener.query('LISTEN public_hcp_events');
  let stopping = false;
  process.once('SIGTERM', () => {
    stopping = true;
    wake?.();
  });

  const started = process.hrtime.bigint();
  let applied = 0;
  while (!stopping) {
    pending = false;
    const { rows } = await db.query<{
      position: string;
      stream_id: string;
      type: string;
      data: Record<string, unknown>;
      metadata: { occurred_at?: string };
      recorded_at: Date;
    }>(
      `SELECT position::text AS position, stream_id, type, data, metadata, recorded_at FROM hcp_events
       WHERE position > $1 AND starts_with(stream_id, 'vm-') AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY hcp_events.position LIMIT $2`, // the column, not its text alias: text order would skip events
      [checkpoint.toString(), PAGE],
    );
    if (rows.length > 0) {
      const ids = [...new Set(rows.map((r) => r.stream_id.slice(3)))];
      await db.query('BEGIN');
      const existing = await db.query<{ id: string; state: VmState }>(
        `SELECT id, state FROM bench_baseline_vm_rows WHERE id = ANY($1::uuid[])`,
        [ids],
      );
      const states = new Map<string, VmState | null>(existing.rows.map((r) => [r.id, r.state]));
      const touched = new Map<string, bigint>();
      for (const r of rows) {
        const id = r.stream_id.slice(3);
        const at = r.metadata.occurred_at ?? r.recorded_at.toISOString();
        const next = evolveVm(states.get(id) ?? null, { type: r.type, version: 1, data: r.data } as VmEvent, at);
        states.set(id, next);
        if (next) touched.set(id, BigInt(r.position));
      }
      // The columns projections/vm-read-model toRow derives, all in one jsonb parameter.
      const upserts = [...touched].map(([id, position]) => {
        const state = states.get(id)!;
        return {
          id,
          project_id: state.project_id,
          name: state.name,
          zone: state.zone,
          image_id: state.image_id,
          flavor_id: state.flavor_id,
          status: state.status,
          desired_state: state.desired_state,
          addresses: state.addresses,
          tags: state.tags,
          metadata: state.metadata,
          last_job_id: state.last_job_id,
          created_at: state.created_at,
          updated_at: state.updated_at,
          state,
          view: JSON.stringify(presentVm(state)),
          position: position.toString(),
        };
      });
      await db.query(
        `INSERT INTO bench_baseline_vm_rows (id, project_id, name, zone, image_id, flavor_id, status, desired_state, addresses, tags, metadata,
                                             last_job_id, created_at, updated_at, state, view, position)
         SELECT id, project_id, name, zone, image_id, flavor_id, status, desired_state, addresses, tags, metadata, last_job_id, created_at, updated_at, state, view, position
         FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, project_id text, name text, zone text, image_id text, flavor_id text, status text,
              desired_state text, addresses jsonb, tags jsonb, metadata jsonb, last_job_id uuid, created_at timestamptz, updated_at timestamptz,
              state jsonb, view text, position bigint)
         ON CONFLICT (id) DO UPDATE SET project_id = EXCLUDED.project_id, name = EXCLUDED.name, zone = EXCLUDED.zone, image_id = EXCLUDED.image_id,
           flavor_id = EXCLUDED.flavor_id, status = EXCLUDED.status, desired_state = EXCLUDED.desired_state, addresses = EXCLUDED.addresses,
           tags = EXCLUDED.tags, metadata = EXCLUDED.metadata, last_job_id = EXCLUDED.last_job_id, created_at = EXCLUDED.created_at,
           updated_at = EXCLUDED.updated_at, state = EXCLUDED.state, view = EXCLUDED.view, position = EXCLUDED.position`,
        [JSON.stringify(upserts)],
      );
      checkpoint = BigInt(rows[rows.length - 1]!.position);
      await db.query(`UPDATE projection_checkpoints SET position = $2, updated_at = now() WHERE name = $1`, [
        NAME,
        checkpoint.toString(),
      ]);
      await db.query('COMMIT');
      applied += rows.length;
      if (stopAt !== null && checkpoint >= stopAt) break;
      if (rows.length === PAGE) continue;
    }
    if (stopAt !== null && checkpoint >= stopAt) break;
    if (pending) continue;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => done(), 5);
      const done = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
      wake = done;
    });
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.stdout.write(`${JSON.stringify({ seconds, applied, rssMb: process.memoryUsage().rss / 2 ** 20 })}\n`);
  await listener.end();
  await db.end();
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
