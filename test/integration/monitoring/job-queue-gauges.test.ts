import { randomUUID } from 'node:crypto';
import { register } from 'prom-client';
import { JobQueue } from '../../../src/jobs/queue/job-queue';
import { JobQueueGauges } from '../../../src/jobs/queue/job-queue-gauges';
import { HcpMetrics } from '../../../src/platform/observability/hcp-metrics';
import { MigratedDatabase, migratedTestDatabase } from '../../support/migrated-database';

/**
 * The job queue's gauges, which the stuck-job alerts read (deploy/monitoring/prometheus/hcp.rules.yaml):
 * counted from real queue rows, in every state a row can be in.
 */
describe('job queue gauges (real PostgreSQL)', () => {
  let database: MigratedDatabase;
  let metrics: HcpMetrics;
  let gauges: JobQueueGauges;

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_queue_gauges', 2);
    register.clear();
    metrics = new HcpMetrics();
    gauges = new JobQueueGauges(new JobQueue(database.ds), metrics);
  });

  afterAll(async () => {
    register.clear();
    await database?.close();
  });

  /** A queue row as the queue writes them, with its times set relative to now (seconds). */
  const row = async (status: string, availableIn: number, opts: { leaseIn?: number; age?: number } = {}) => {
    await database.ds.query(
      `INSERT INTO job_queue (job_id, project_id, type, resource_id, status, available_at, lease_owner, lease_expires_at, created_at)
       VALUES ($1, 'p', 'vm.create', $2, $3, now() + make_interval(secs => $4), $5,
               CASE WHEN $6::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $6::float8) END,
               now() - make_interval(secs => $7))`,
      [
        randomUUID(),
        randomUUID(),
        status,
        availableIn,
        status === 'leased' ? 'worker-1' : null,
        opts.leaseIn ?? null,
        opts.age ?? 0,
      ],
    );
  };

  const values = async () => {
    const jobs = (await metrics.jobQueueJobs.get()).values;
    return {
      byState: Object.fromEntries(jobs.map((v) => [v.labels.state, v.value])),
      oldestDue: (await metrics.jobQueueOldestDue.get()).values[0]?.value,
      oldestOpen: (await metrics.jobQueueOldestOpen.get()).values[0]?.value,
    };
  };

  it('reports every state at 0 and no wait on an empty queue', async () => {
    await gauges.record();
    expect(await values()).toEqual({
      byState: { due: 0, scheduled: 0, running: 0, lease_expired: 0 },
      oldestDue: 0,
      oldestOpen: 0,
    });
  });

  it('counts due, scheduled, running and expired rows, and ages the longest wait and the oldest open job', async () => {
    await row('queued', -120, { age: 130 }); // due for 2 minutes
    await row('queued', -5, { age: 5 }); // due for 5 s
    await row('queued', 60, { age: 30 }); // a retry planned in a minute
    await row('leased', -600, { leaseIn: 20, age: 900 }); // a live worker holds it: the oldest open job
    await row('leased', -400, { leaseIn: -300, age: 400 }); // its worker stopped renewing 5 minutes ago
    await row('done', -5000, { age: 5000 }); // finished: counted nowhere
    await gauges.record();
    const seen = await values();
    expect(seen.byState).toEqual({ due: 2, scheduled: 1, running: 1, lease_expired: 1 });
    // The expired lease has waited longest (300 s) for a worker to take it again.
    expect(seen.oldestDue).toBeGreaterThanOrEqual(300);
    expect(seen.oldestDue).toBeLessThan(400);
    expect(seen.oldestOpen).toBeGreaterThanOrEqual(900);
    expect(seen.oldestOpen).toBeLessThan(5000);
  });

  it('comes back down once the rows are done', async () => {
    await database.ds.query(`UPDATE job_queue SET status = 'done', lease_owner = NULL, lease_expires_at = NULL`);
    await gauges.record();
    expect(await values()).toEqual({
      byState: { due: 0, scheduled: 0, running: 0, lease_expired: 0 },
      oldestDue: 0,
      oldestOpen: 0,
    });
  });
});
