import { randomUUID } from 'node:crypto';
import { JobQueue } from '../../../src/jobs/queue/job-queue';
import { MigratedDatabase, migratedTestDatabase } from '../../support/migrated-database';

/** The worker's grouped statements keep the lease guard of their one-job forms, row by row. */
describe('job queue batches (real PostgreSQL)', () => {
  let database: MigratedDatabase;
  let queue: JobQueue;

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_job_batches', 4);
    queue = new JobQueue(database.ds);
  });

  afterAll(async () => {
    await database?.close();
  });

  const enqueue = async () => {
    const job = { job_id: randomUUID(), project_id: 'p', type: 'vm.create', resource_id: randomUUID() };
    await queue.enqueue(database.ds.manager, [job]);
    return job.job_id;
  };

  const rowOf = async (jobId: string) =>
    (await database.ds.query(`SELECT status, lease_owner FROM job_queue WHERE job_id = $1`, [jobId]))[0] as {
      status: string;
      lease_owner: string | null;
    };

  it('renews and completes only the leases the owner still holds', async () => {
    const kept = await enqueue();
    expect((await queue.lease('a', 60_000, 10)).map((j) => j.job_id)).toEqual([kept]);
    const lost = await enqueue();
    expect((await queue.lease('a', 1, 10)).map((j) => j.job_id)).toEqual([lost]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Its lease ran out: another worker takes it over.
    expect((await queue.lease('b', 60_000, 10)).map((j) => j.job_id)).toEqual([lost]);

    expect(await queue.renewMany([kept, lost], 'a', 60_000)).toEqual(new Set([kept]));
    await queue.completeMany([kept, lost], 'a');

    expect(await rowOf(kept)).toEqual({ status: 'done', lease_owner: null });
    expect(await rowOf(lost)).toEqual({ status: 'leased', lease_owner: 'b' });
    expect(await queue.renewMany([lost], 'b', 60_000)).toEqual(new Set([lost]));
  });
});
