import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { AuditRecord, createHcpUpcasters, DomainEvent, jobEvent, JobQueued, JobStarted } from '@hcp/domain';
import { DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { MessagingError } from '@hcp/messaging';
import { AuditProjection } from '@hcp/projections/audit/audit.projection';
import { DeadLetter, ProjectionRunner, retryDeadLetter } from '@hcp/projections';
import { eventually } from '../../support/api-client';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';

/**
 * The audit trail's sink and dead letters: a record the sink refuses is not silently lost. Its event is
 * a dead letter; retried once the sink takes it, the record is published and written then.
 */
describe('audit projection: dead letters and the sink (real PostgreSQL)', () => {
  let database: MigratedDatabase;
  let ds: DataSource;
  let pool: Pool;
  let store: PostgresEventStore;
  let runner: ProjectionRunner | null = null;
  const codec = new DomainEventCodec(createHcpUpcasters());

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_audit_dead', 6);
    ds = database.ds;
    pool = new Pool({ connectionString: database.db.url, max: 4 });
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
  });

  afterAll(async () => {
    await runner?.stop();
    await store?.close();
    await pool?.end();
    await database?.close();
  });

  const ctx = { actor: 'ann', trace_id: 'trace-dl', occurred_at: new Date().toISOString() };
  /** A job's stream: queued (with the job's id), then the further events. */
  const appendJob = async (more: DomainEvent[]) => {
    const jobId = randomUUID();
    const events = [queued(jobId), ...more];
    const ids = events.map(() => randomUUID());
    await store.append(
      `job-${jobId}`,
      events.map((e, i) => codec.encode(e, ctx, ids[i])),
      'no_stream',
    );
    return ids;
  };
  const queued = (jobId: string): JobQueued =>
    jobEvent<JobQueued>('JobQueued', {
      job_id: jobId,
      project_id: 'audited',
      type: 'vm.start',
      resource_id: randomUUID(),
      trace_id: 'trace-dl',
      actor: 'ann',
      params: {},
    });
  const started = (worker: string): JobStarted => jobEvent<JobStarted>('JobStarted', { attempt: 1, worker });
  const auditLogIds = async (): Promise<string[]> =>
    (await ds.query(`SELECT id FROM audit_log`)).map((r: { id: string }) => r.id);

  it('publishes a refused record once its dead letter is retried, and never before', async () => {
    const published: AuditRecord[] = [];
    let refused: string | null = null;
    const sink = {
      publish: async (records: AuditRecord[]) => {
        // What the envelope check does to a record it cannot carry: nothing of the batch goes out.
        if (records.some((r) => r.event_id === refused))
          throw new MessagingError('INVALID_MESSAGE', `invalid message ${refused}: project_id too long`);
        published.push(...records);
      },
    };
    const projection = new AuditProjection(sink);
    const [, poisonId] = await appendJob([started('w-poison')]);
    refused = poisonId;
    const [, laterId] = await appendJob([started('w-later')]);
    runner = new ProjectionRunner(ds, store, codec, projection, { batchSize: 500, retryMs: 5 });
    runner.start();

    await eventually(
      async () => (published.some((r) => r.event_id === laterId) ? true : undefined),
      'the later record published',
    );
    expect(published.map((r) => r.event_id)).not.toContain(poisonId);
    expect(await auditLogIds()).not.toContain(poisonId);
    const [letter]: DeadLetter[] = await ds.query(`SELECT * FROM projection_dead_letters WHERE projection = 'audit'`);
    expect(letter).toMatchObject({ event_id: poisonId, event_type: 'JobStarted', status: 'open' });

    // The sink takes it now (a fixed release): the retry publishes it and writes it, job details included.
    refused = null;
    const { outcome } = await retryDeadLetter(ds, store, codec, () => projection, letter.id);
    expect(outcome).toBe('resolved');
    const record = published.find((r) => r.event_id === poisonId);
    expect(record).toMatchObject({ actor: 'ann', action: 'vm.start', result: 'started', project_id: 'audited' });
    expect(await auditLogIds()).toContain(poisonId);
  });
});
