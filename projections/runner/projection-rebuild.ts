import { Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { DomainEventCodec, EventStore, START_POSITION } from '@hcp/eventstore';
import { Projection } from './projection';

/** A projection that owns plain read-model tables can be rebuilt from position zero. */
export interface RebuildableProjection extends Projection {
  /** The tables it writes (all of them, in the public schema). */
  readonly tables: readonly string[];
}

export interface RebuildResult {
  name: string;
  events: number;
  position: string;
  seconds: number;
}

const PAGE = 2000;

/**
 * Events the live projection holds no rows for: its dead letters not resolved (open or skipped). The
 * rebuild leaves them out too, so the rebuilt tables are the live ones, and one poison event does not
 * fail every rebuild; a resolved letter was applied by its retry, so it is replayed like any event.
 */
async function unappliedDeadLetters(tx: EntityManager, projection: string): Promise<Set<string>> {
  const rows: Array<{ event_id: string }> = await tx.query(
    `SELECT event_id FROM public.projection_dead_letters WHERE projection = $1 AND status <> 'resolved'`,
    [projection],
  );
  return new Set(rows.map((r) => r.event_id));
}

/**
 * Rebuilds a read model beside the live one, then swaps, with no downtime for readers:
 * 1. empty copies of its tables are created in a schema of their own (`rebuild_<name>`);
 * 2. the projection replays every event into them (its SQL is unqualified, so `search_path` points it
 *    at the copies), while the live projection goes on serving and updating the live tables;
 * 3. in one transaction, holding the live checkpoint row (the live runner's next checkpoint write
 *    waits, then finds it moved and restarts from it): the events that arrived meanwhile are applied to
 *    the copies, the live tables are dropped, the copies take their place and the checkpoint moves to
 *    the copies' position. Readers wait on that transaction for milliseconds, never see a half state.
 * Events that are open or skipped dead letters of the projection are left out, as the live run left them.
 */
export async function rebuildProjection(
  db: DataSource,
  store: EventStore,
  codec: DomainEventCodec,
  projection: RebuildableProjection,
): Promise<RebuildResult> {
  const logger = new Logger(`rebuild:${projection.name}`);
  const started = Date.now();
  const shadow = `rebuild_${projection.name.replace(/[^a-z0-9]/g, '_')}`;
  await db.query(`DROP SCHEMA IF EXISTS ${shadow} CASCADE`);
  await db.query(`CREATE SCHEMA ${shadow}`);
  for (const table of projection.tables)
    await db.query(`CREATE TABLE ${shadow}.${table} (LIKE public.${table} INCLUDING ALL)`);

  let position = START_POSITION;
  let events = 0;
  const applyPage = async (tx: EntityManager): Promise<number> => {
    const page = (await store.readAll(position === START_POSITION ? 'start' : position, PAGE)).filter(
      (e) => position < e.position,
    );
    if (page.length === 0) return 0;
    const unapplied = await unappliedDeadLetters(tx, projection.name);
    const mine = page
      .filter(
        (e) =>
          projection.streamPrefixes.some((p) => e.streamId.startsWith(p)) && codec.knows(e) && !unapplied.has(e.id),
      )
      .map((e) => codec.decode(e));
    await tx.query(`SET LOCAL search_path TO ${shadow}, public`);
    if (mine.length) await projection.apply(mine, tx);
    position = page[page.length - 1].position;
    events += mine.length;
    return page.length;
  };

  try {
    while ((await db.transaction((tx) => applyPage(tx))) > 0) {
      if (events % 100_000 < PAGE) logger.log(`replayed ${events} events`);
    }
    await db.transaction(async (tx) => {
      await tx.query(`SELECT position FROM projection_checkpoints WHERE name = $1 FOR UPDATE`, [projection.name]);
      while ((await applyPage(tx)) > 0);
      await tx.query(`SET LOCAL search_path TO public`);
      for (const table of projection.tables) {
        await tx.query(`DROP TABLE public.${table}`);
        await tx.query(`ALTER TABLE ${shadow}.${table} SET SCHEMA public`);
      }
      await tx.query(
        `INSERT INTO projection_checkpoints (name, position, updated_at) VALUES ($1, $2, now())
         ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, updated_at = now()`,
        [projection.name, position.toString()],
      );
    });
  } finally {
    await db.query(`DROP SCHEMA IF EXISTS ${shadow} CASCADE`);
  }
  const seconds = (Date.now() - started) / 1000;
  logger.log(`rebuilt from ${events} events in ${seconds.toFixed(1)} s`);
  return { name: projection.name, events, position: position.toString(), seconds };
}
