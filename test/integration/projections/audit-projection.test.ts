import { randomUUID } from 'node:crypto';
import { AuditRecord, DomainEvent, jobEvent, JobQueued, JobStarted, JobSucceeded } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { AuditProjection } from '@hcp/projections/audit/audit.projection';
import { inCheckpointedStatement } from '../../../projections/runner/checkpointed-statement';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';
import { projectionCheckpoints } from '../../support/projection-checkpoints';

/** The audit projection's live batches: one statement each with the checkpoint's move (real PostgreSQL). */
describe('audit projection as one statement per batch', () => {
  let database: MigratedDatabase;
  let position = 0n;

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_audit_statement', 2);
  });

  afterAll(async () => {
    await database?.close();
  });

  const jobId = randomUUID();
  const decoded = (event: DomainEvent, revision: bigint): DecodedEvent => {
    position += 1n;
    return {
      event,
      eventId: randomUUID(),
      streamId: `job-${jobId}`,
      revision,
      position,
      at: new Date().toISOString(),
      context: { actor: 'ann', trace_id: 'trace-1' },
    };
  };
  const queued = jobEvent<JobQueued>('JobQueued', {
    job_id: jobId,
    project_id: 'audited',
    type: 'vm.start',
    resource_id: randomUUID(),
    trace_id: 'trace-1',
    actor: 'ann',
    params: {},
  });

  it("records a job's later steps with what its queued event said, read back from an earlier batch", async () => {
    const published: AuditRecord[] = [];
    const projection = new AuditProjection({ publish: async (records) => void published.push(...records) });
    const { ds } = database;
    const apply = async (events: DecodedEvent[], previous: bigint) =>
      inCheckpointedStatement(
        ds,
        { projection: 'audit', previous, next: events[events.length - 1]!.position },
        await projection.oneStatement(events, ds.manager),
      );

    expect(await apply([decoded(queued, 0n)], -1n)).toBe(true);
    const later = [
      decoded(jobEvent<JobStarted>('JobStarted', { attempt: 1, worker: 'w-1' }), 1n),
      decoded(jobEvent<JobSucceeded>('JobSucceeded', { attempt: 1 }), 2n),
    ];
    expect(await apply(later, 1n)).toBe(true);

    const rows: Array<{ id: string; project_id: string; action: string }> = await ds.query(
      `SELECT id, project_id, action FROM audit_log ORDER BY position`,
    );
    expect(rows.map((r) => r.id)).toEqual(published.map((r) => r.event_id));
    // Both later steps are recorded, with the project only the queued event of the first batch named.
    expect(rows.filter((r) => later.some((e) => e.eventId === r.id))).toHaveLength(2);
    expect(rows.every((r) => r.project_id === 'audited')).toBe(true);
    expect(await projectionCheckpoints(ds).position('audit')).toBe(String(position));

    // The same batch again: its rows are there, so it is refused (and goes to `apply`) before any move.
    expect(await apply(later, 1n)).toBe(false);
  });
});
