import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { HcpError } from '@hcp/domain';
import { DecodedEvent, DomainEventCodec, PostgresEventStore, RecordedEvent } from '@hcp/eventstore';
import {
  DeadLetter,
  DeadLetterRecorded,
  ProjectionRunner,
  RebuildableProjection,
  rebuildProjection,
  retryDeadLetter,
  skipDeadLetter,
} from '@hcp/projections';
import { eventually } from '../../support/api-client';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';

/** Every stored event as itself: the runner's behaviour, not the domain's upcasters, is under test. */
const passThroughCodec = {
  knows: () => true,
  decode: (e: RecordedEvent): DecodedEvent => ({
    event: { type: e.type, version: 1, data: e.data } as unknown as DecodedEvent['event'],
    eventId: e.id,
    streamId: e.streamId,
    revision: e.revision,
    position: e.position,
    at: e.recordedAt.toISOString(),
    context: {},
  }),
} as unknown as DomainEventCodec;

/**
 * A projection that records each event's label in `probe_rows`, and fails where `fault` says so (it is
 * asked once per event per try, so tests can count tries).
 */
class ProbeProjection implements RebuildableProjection {
  readonly streamPrefixes: string[];
  readonly tables: string[];
  tries = new Map<string, number>();

  constructor(
    readonly name: string,
    public fault: (label: string, tries: number) => Error | null = () => null,
    private readonly table = 'probe_rows',
  ) {
    this.streamPrefixes = [`${name}-`];
    this.tables = [table];
  }

  async apply(events: DecodedEvent[], tx: EntityManager): Promise<void> {
    const labels = events.map((e) => (e.event as unknown as { data: { label: string } }).data.label);
    for (const label of labels) {
      const tries = (this.tries.get(label) ?? 0) + 1;
      this.tries.set(label, tries);
      const err = this.fault(label, tries);
      if (err) throw err;
    }
    if (labels.length)
      await tx.query(
        // Unqualified: a rebuild points it at its copy of the table.
        `INSERT INTO ${this.table} (projection, label) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
        [this.name, labels],
      );
  }
}

describe('projection runner: dead letters (real PostgreSQL)', () => {
  let database: MigratedDatabase;
  let ds: DataSource;
  let pool: Pool;
  let store: PostgresEventStore;
  const runners: ProjectionRunner[] = [];

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_dead_letters', 6);
    ds = database.ds;
    await ds.query(`CREATE TABLE probe_rows (projection text, label text, PRIMARY KEY (projection, label))`);
    await ds.query(`CREATE TABLE probe_rebuilt (projection text, label text, PRIMARY KEY (projection, label))`);
    pool = new Pool({ connectionString: database.db.url, max: 4 });
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
  });

  afterEach(async () => {
    await Promise.all(runners.splice(0).map((r) => r.stop()));
  });

  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await database?.close();
  });

  const newName = () => `probe${randomUUID().slice(0, 8)}`;
  const append = async (projection: ProbeProjection, labels: string[]) => {
    const events = labels.map((label) => ({ id: randomUUID(), type: 'ProbeHappened', data: { label } }));
    await store.append(`${projection.name}-${randomUUID()}`, events, 'any');
    return events.map((e) => e.id);
  };
  const run = (projection: ProbeProjection, onDeadLetter?: (d: DeadLetterRecorded) => void) => {
    const runner = new ProjectionRunner(ds, store, passThroughCodec, projection, {
      batchSize: 500,
      retryMs: 5,
      deadLetterAfter: 3,
      onDeadLetter,
    });
    runners.push(runner);
    runner.start();
    return runner;
  };
  const applied = async (projection: ProbeProjection): Promise<string[]> =>
    (await ds.query(`SELECT label FROM probe_rows WHERE projection = $1 ORDER BY label`, [projection.name])).map(
      (r: { label: string }) => r.label,
    );
  const appliedIncludes = (projection: ProbeProjection, label: string) =>
    eventually(
      async () => ((await applied(projection)).includes(label) ? true : undefined),
      `${projection.name} to apply ${label}`,
    );
  const deadLetters = (projection: ProbeProjection): Promise<DeadLetter[]> =>
    ds.query(`SELECT * FROM projection_dead_letters WHERE projection = $1`, [projection.name]);
  const checkpoint = async (projection: ProbeProjection): Promise<bigint> =>
    BigInt(
      (await ds.query(`SELECT position FROM projection_checkpoints WHERE name = $1`, [projection.name]))[0].position,
    );

  it('dead-letters exactly the event that fails on its own, and applies the events after it', async () => {
    const projection = new ProbeProjection(newName(), (label) =>
      label === 'c-poison' ? new Error('cannot fold') : null,
    );
    const recorded: DeadLetterRecorded[] = [];
    const [, , poisonId] = await append(projection, ['a', 'b', 'c-poison', 'd', 'e']);
    const runner = run(projection, (d) => recorded.push(d));

    await appliedIncludes(projection, 'e');
    expect(await applied(projection)).toEqual(['a', 'b', 'd', 'e']);
    const letters = await deadLetters(projection);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({
      event_id: poisonId,
      event_type: 'ProbeHappened',
      status: 'open',
      attempts: 3,
      error: 'Error: cannot fold',
    });
    expect(recorded.map((r) => r.eventId)).toEqual([poisonId]);
    // The checkpoint went past the poison with the rest of the batch.
    expect(await checkpoint(projection)).toBe(runner.status().position);

    // And the projection keeps going with what comes next.
    await append(projection, ['f']);
    await appliedIncludes(projection, 'f');
    expect(await deadLetters(projection)).toHaveLength(1);
  });

  it('never dead-letters a transient failure: it retries from the checkpoint until the event applies', async () => {
    // Fails far more often than the dead-letter threshold, with what a lost connection looks like.
    const projection = new ProbeProjection(newName(), (label, tries) =>
      label === 'b-flaky' && tries <= 8
        ? Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' })
        : null,
    );
    await append(projection, ['a', 'b-flaky', 'c']);
    run(projection);

    await appliedIncludes(projection, 'c');
    expect(await applied(projection)).toEqual(['a', 'b-flaky', 'c']);
    expect(projection.tries.get('b-flaky')).toBe(9);
    expect(await deadLetters(projection)).toEqual([]);
  });

  it('dead-letters nothing when the projection fails on every event, not on one (the control event fails too)', async () => {
    let broken = false;
    const projection = new ProbeProjection(newName(), () => (broken ? new Error('relation "x" does not exist') : null));
    await append(projection, ['a']);
    const runner = run(projection);
    await appliedIncludes(projection, 'a');
    const before = await checkpoint(projection);

    broken = true;
    await append(projection, ['b', 'c']);
    // Three tries of b alone, the control (a again), and the runner starts over: never a dead letter.
    await eventually(
      async () => ((projection.tries.get('b') ?? 0) >= 7 ? true : undefined),
      'b tried through two rounds',
    );
    expect(projection.tries.get('a')).toBeGreaterThanOrEqual(2);
    expect(await deadLetters(projection)).toEqual([]);
    expect(await checkpoint(projection)).toBe(before);

    // Repaired (a new release) while stopped: repairing it between b's last try and the control would
    // make b look like the culprit.
    await runner.stop();
    broken = false;
    run(projection);
    await appliedIncludes(projection, 'c');
    expect(await applied(projection)).toEqual(['a', 'b', 'c']);
    expect(await deadLetters(projection)).toEqual([]);
  });

  it('after a restart, takes the event at its checkpoint as the control, and still dead-letters nothing', async () => {
    let broken = false;
    const projection = new ProbeProjection(newName(), () => (broken ? new Error('column "y" does not exist') : null));
    await append(projection, ['a']);
    const first = run(projection);
    await appliedIncludes(projection, 'a');
    await first.stop();
    const before = await checkpoint(projection);

    broken = true;
    await append(projection, ['b']);
    // A new runner (a restarted process) remembers no event it applied: the control comes from the store.
    run(projection);
    await eventually(
      async () => ((projection.tries.get('b') ?? 0) >= 7 ? true : undefined),
      'b tried through two rounds',
    );
    expect(projection.tries.get('a')).toBeGreaterThanOrEqual(3);
    expect(await deadLetters(projection)).toEqual([]);
    expect(await checkpoint(projection)).toBe(before);
  });

  it('retries a dead letter through the projection: still failing it stays open, fixed it is applied and resolved', async () => {
    let fixed = false;
    const projection = new ProbeProjection(newName(), (label) =>
      label === 'b-poison' && !fixed ? new Error('cannot fold b') : null,
    );
    await append(projection, ['a', 'b-poison', 'c']);
    run(projection);
    await appliedIncludes(projection, 'c');
    const [letter] = await deadLetters(projection);
    const projectionOf = (name: string) => (name === projection.name ? projection : undefined);

    const failed = await retryDeadLetter(ds, store, passThroughCodec, projectionOf, letter.id);
    expect(failed.outcome).toBe('failed');
    expect(failed.letter).toMatchObject({ status: 'open', attempts: 4, error: 'Error: cannot fold b' });
    expect(await applied(projection)).toEqual(['a', 'c']);

    fixed = true;
    const resolved = await retryDeadLetter(ds, store, passThroughCodec, projectionOf, letter.id);
    expect(resolved.outcome).toBe('resolved');
    expect(resolved.letter.status).toBe('resolved');
    expect(await applied(projection)).toEqual(['a', 'b-poison', 'c']);

    // A resolved letter is neither retried nor skipped again.
    await expect(retryDeadLetter(ds, store, passThroughCodec, projectionOf, letter.id)).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    await expect(skipDeadLetter(ds, letter.id)).rejects.toBeInstanceOf(HcpError);
  });

  it('skips a dead letter on request, and answers NOT_FOUND for a letter that does not exist', async () => {
    const projection = new ProbeProjection(newName(), (label) => (label === 'a-poison' ? new Error('no') : null));
    await append(projection, ['a-poison', 'b']);
    run(projection);
    await appliedIncludes(projection, 'b');
    const [letter] = await deadLetters(projection);

    expect((await skipDeadLetter(ds, letter.id)).status).toBe('skipped');
    expect((await deadLetters(projection))[0].status).toBe('skipped');
    await expect(skipDeadLetter(ds, randomUUID())).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(retryDeadLetter(ds, store, passThroughCodec, () => projection, randomUUID())).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });
  it('rebuilds without the events that are open or skipped dead letters, as the live run left them, and with resolved ones', async () => {
    let fixed = false;
    const projection = new ProbeProjection(
      newName(),
      (label) => (label === 'b-poison' && !fixed ? new Error('cannot fold b') : null),
      'probe_rebuilt',
    );
    await append(projection, ['a', 'b-poison', 'c']);
    const runner = run(projection);
    await eventually(
      async () => ((await ds.query(`SELECT 1 FROM probe_rebuilt WHERE label = 'c'`)).length ? true : undefined),
      'c applied',
    );
    await runner.stop();
    const rebuilt = async () =>
      (await ds.query(`SELECT label FROM probe_rebuilt ORDER BY label`)).map((r: { label: string }) => r.label);

    await rebuildProjection(ds, store, passThroughCodec, projection);
    expect(await rebuilt()).toEqual(['a', 'c']);

    fixed = true;
    const [letter] = await deadLetters(projection);
    expect((await retryDeadLetter(ds, store, passThroughCodec, () => projection, letter.id)).outcome).toBe('resolved');
    await rebuildProjection(ds, store, passThroughCodec, projection);
    expect(await rebuilt()).toEqual(['a', 'b-poison', 'c']);
  });
});
