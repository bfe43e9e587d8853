import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { decideQuota, evolveQuota, foldQuota, QuotaCommand, QuotaEvent, QuotaState, quotaEvent } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { QuotaReadModelProjection } from '@hcp/projections/quota-read-model/quota-read-model.projection';
import { ProjectQuotaReservations1767744000060 } from '../../../src/platform/persistence/migrations/1767744000060-project-quota-reservations';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';
import { plansScanningWholeTable, type CapturedStatement } from '../../support/query-plans';

/** The quota read model on real PostgreSQL: a project's row, and one row per reservation. */
describe('quota read model projection', () => {
  let database: MigratedDatabase;
  let ds: DataSource;
  let position = 0n;
  const projection = new QuotaReadModelProjection();

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_quota_rm');
    ds = database.ds;
  });

  afterAll(async () => {
    await database?.close();
  });

  /** The events a run of commands appends to one project's stream, as the aggregate decides them. */
  function streamOf(projectId: string, commands: QuotaCommand[]): DecodedEvent[] {
    let state: QuotaState | null = null;
    const events: DecodedEvent[] = [];
    for (const command of commands) {
      let decided: QuotaEvent[];
      try {
        decided = decideQuota(state, command);
      } catch {
        continue; // refused (over the limit): nothing appended
      }
      for (const event of decided) {
        const at = new Date(Date.UTC(2026, 0, 1, 0, 0, events.length)).toISOString();
        state = evolveQuota(state, event, at);
        events.push({
          event,
          eventId: randomUUID(),
          streamId: `quota-${projectId}`,
          revision: BigInt(events.length),
          position: ++position,
          at,
          context: {},
        });
      }
    }
    return events;
  }

  const apply = (events: DecodedEvent[]) => ds.transaction((tx) => projection.apply(events, tx));
  const sorted = <T>(entries: Iterable<readonly [string, T]>) =>
    [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

  async function projected(projectId: string) {
    const [row] = await ds.query(
      `SELECT limits, usage, updated_at, position::text AS position FROM project_quotas WHERE project_id = $1`,
      [projectId],
    );
    const held: Array<{ vm_id: string; vcpus: number; ram_mb: number; disk_gb: number }> = await ds.query(
      `SELECT vm_id, vcpus::int, ram_mb::int, disk_gb::int FROM project_quota_reservations WHERE project_id = $1`,
      [projectId],
    );
    return { row, reservations: sorted(held.map(({ vm_id, ...resources }) => [vm_id, resources] as const)) };
  }

  const resources = fc.record({
    vcpus: fc.integer({ min: 0, max: 8 }),
    ram_mb: fc.integer({ min: 0, max: 4096 }),
    disk_gb: fc.integer({ min: 0, max: 100 }),
  });
  /** Commands on a few VM ids (some reserved again after a release) and changing limits. */
  const commands = (projectId: string) =>
    fc.array(
      fc.oneof(
        fc.record({ vm: fc.integer({ min: 0, max: 11 }), resources }).map(
          ({ vm, resources }): QuotaCommand => ({
            type: 'reserve',
            project_id: projectId,
            vm_id: vm === 0 ? '__proto__' : `vm-${vm}`,
            resources,
          }),
        ),
        fc.integer({ min: 0, max: 11 }).map(
          (vm): QuotaCommand => ({
            type: 'release',
            project_id: projectId,
            vm_id: vm === 0 ? '__proto__' : `vm-${vm}`,
          }),
        ),
        fc.integer({ min: 0, max: 10 }).map(
          (instances): QuotaCommand => ({
            type: 'set_limits',
            project_id: projectId,
            limits: { instances, vcpus: 40, ram_mb: 40_000, disk_gb: 1_000 },
          }),
        ),
      ),
      { minLength: 1, maxLength: 40 },
    );

  it('holds what folding each stream gives, whatever the batches and however often a batch is applied again', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(commands('a'), commands('b')),
        fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 20 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 20 }),
        async ([forA, forB], cuts, replays) => {
          const run = randomUUID().slice(0, 8);
          const [a, b] = [`a-${run}`, `b-${run}`];
          const streams = [
            streamOf(
              a,
              forA.map((c) => ({ ...c, project_id: a })),
            ),
            streamOf(
              b,
              forB.map((c) => ({ ...c, project_id: b })),
            ),
          ];
          // The two streams interleaved in position order, as the runner reads them, then cut into batches.
          const all = streams.flat().sort((x, y) => Number(x.position - y.position));
          let at = 0;
          for (let i = 0; at < all.length; i++) {
            const batch = all.slice(at, at + cuts[i % cuts.length]!);
            await apply(batch);
            // A batch applied again (a runner that restarted before its checkpoint moved) changes nothing.
            if (replays[i % replays.length]) await apply(batch);
            at += batch.length;
          }
          for (const [projectId, stream] of [
            [a, streams[0]!],
            [b, streams[1]!],
          ] as const) {
            const expected = foldQuota(stream.map((e) => ({ event: e.event as QuotaEvent, at: e.at })));
            const { row, reservations } = await projected(projectId);
            if (!expected) {
              expect(row).toBeUndefined();
              continue;
            }
            expect(row).toEqual({
              limits: expected.limits,
              usage: expected.usage,
              updated_at: new Date(expected.updated_at),
              position: stream[stream.length - 1]!.position.toString(),
            });
            expect(reservations).toEqual(sorted(expected.reservations.entries()));
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('writes only the reservations a batch names, however many the project holds', async () => {
    const p = `big-${randomUUID().slice(0, 8)}`;
    const many = streamOf(
      p,
      Array.from({ length: 2_000 }, (_, i) => ({
        type: 'reserve',
        project_id: p,
        vm_id: `vm-${i}`,
        resources: { vcpus: 1, ram_mb: 512, disk_gb: 10 },
      })),
    );
    await apply(many);
    const before = await ds.query(
      `SELECT vm_id, xmin::text AS xmin FROM project_quota_reservations WHERE project_id = $1 ORDER BY vm_id`,
      [p],
    );
    await apply([
      {
        event: quotaEvent('QuotaReleased', { project_id: p, vm_id: 'vm-7' }),
        eventId: randomUUID(),
        streamId: `quota-${p}`,
        revision: BigInt(many.length),
        position: ++position,
        at: new Date().toISOString(),
        context: {},
      },
    ]);
    const after = await ds.query(
      `SELECT vm_id, xmin::text AS xmin FROM project_quota_reservations WHERE project_id = $1 ORDER BY vm_id`,
      [p],
    );
    expect(after).toEqual(before.filter((r: { vm_id: string }) => r.vm_id !== 'vm-7'));
    expect((await projected(p)).row.usage).toEqual({
      instances: 1_999,
      vcpus: 1_999,
      ram_mb: 1_999 * 512,
      disk_gb: 19_990,
    });
  });

  it('reads and releases reservations by their key even before the table has statistics', async () => {
    // A temporary table of the same shape shadows the real one on this connection; nothing ever
    // analyzes it, like a table just filled by an import or after pg_upgrade (bench/README.md, "the
    // eleventh session").
    const runner = ds.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      const p = `unanalyzed-${randomUUID().slice(0, 8)}`;
      await runner.query(
        `CREATE TEMP TABLE project_quota_reservations (LIKE project_quota_reservations INCLUDING ALL) ON COMMIT DROP`,
      );
      await runner.query(
        `INSERT INTO project_quota_reservations SELECT $1, 'vm-' || g, 1, 512, 10 FROM generate_series(1, 50000) g`,
        [p],
      );
      const usage = { instances: 50_000, vcpus: 50_000, ram_mb: 50_000 * 512, disk_gb: 500_000 };
      await runner.query(
        `INSERT INTO project_quotas (project_id, limits, usage, updated_at, position) VALUES ($1, $2, $3, now(), 0)`,
        [p, { ...usage, instances: 100_000 }, usage],
      );
      const releases: DecodedEvent[] = Array.from({ length: 200 }, (_, i) => ({
        event: quotaEvent('QuotaReleased', { project_id: p, vm_id: `vm-${i * 7 + 1}` }),
        eventId: randomUUID(),
        streamId: `quota-${p}`,
        revision: BigInt(50_000 + i),
        position: ++position,
        at: new Date().toISOString(),
        context: {},
      }));

      const statements = jest.spyOn(runner.manager, 'query');
      let captured: CapturedStatement[];
      try {
        await projection.apply(releases, runner.manager);
        captured = statements.mock.calls
          .map(([text, values]) => ({ text, values: (values as unknown[] | undefined) ?? [] }))
          .filter(({ text }) => text.includes('project_quota_reservations'));
      } finally {
        statements.mockRestore();
      }
      const [{ count }] = await runner.query(`SELECT count(*)::int AS count FROM project_quota_reservations`);
      expect(count).toBe(50_000 - 200);

      const run = (sql: string) => runner.query(sql);
      expect(captured).toHaveLength(2); // the read of the named reservations, and the batch's write
      for (const statement of captured)
        expect(await plansScanningWholeTable(run, statement, 'project_quota_reservations')).toEqual([]);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  });

  it('carries the reservations a project row held as JSON into their own rows, and back down', async () => {
    const migration = new ProjectQuotaReservations1767744000060();
    const runner = ds.createQueryRunner();
    const p = `mig-${randomUUID().slice(0, 8)}`;
    try {
      await migration.down(runner);
      const state = {
        project_id: p,
        limits: { instances: 5, vcpus: 10, ram_mb: 4096, disk_gb: 100 },
        usage: { instances: 2, vcpus: 3, ram_mb: 1536, disk_gb: 30 },
        // Parsed, so "__proto__" is a VM id like any other.
        reservations: JSON.parse(
          '{"x": {"vcpus": 1, "ram_mb": 512, "disk_gb": 10}, "__proto__": {"vcpus": 2, "ram_mb": 1024, "disk_gb": 20}}',
        ),
        updated_at: '2026-01-01T00:00:05.000Z',
      };
      await ds.query(
        `INSERT INTO project_quotas (project_id, limits, usage, state, position) VALUES ($1, $2, $3, $4, 42)`,
        [p, state.limits, state.usage, JSON.stringify(state)],
      );
      await migration.up(runner);
      const { row, reservations } = await projected(p);
      expect(row).toEqual({
        limits: state.limits,
        usage: state.usage,
        updated_at: new Date(state.updated_at),
        position: '42',
      });
      expect(reservations).toEqual(sorted(Object.entries(state.reservations)));
      await migration.down(runner);
      const [down] = await ds.query(`SELECT state FROM project_quotas WHERE project_id = $1`, [p]);
      expect(down.state.reservations).toEqual(state.reservations);
      expect(new Date(down.state.updated_at)).toEqual(new Date(state.updated_at));
    } finally {
      await migration.up(runner).catch(() => undefined);
      await runner.release();
    }
  });
});
