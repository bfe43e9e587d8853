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
 * Rebuilds a read model beside the live one, then swaps, with no downtime for readers:
 * 1. empty copies of its tables are created in a schema of their own (`rebuild_<name>`);
 * 2. the projection replays every event into them (its SQL is unqualified, so `search_path` points it
 *    at the copies), while the live projection goes on serving and updating the live tables;
 * 3. in one transaction, holding the live checkpoint row (the live runner's next checkpoint write
 *    waits, then finds it moved and restarts from it): the events that arrived meanwhile are applied to
 *    the copies, the live tables are dropped, the copies take their place and the checkpoint moves to
 *    the copies' position. Readers wait on that transaction for milliseconds, never see a half state.
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
    const mine = page
      .filter((e) => projection.streamPrefixes.some((p) => e.streamId.startsWith(p)) && codec.knows(e))
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
