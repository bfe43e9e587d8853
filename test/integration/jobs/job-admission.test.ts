import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { DataSource } from 'typeorm';
import { createHcpUpcasters, decideVm, jobQueuedFor, VmCreateRequestedData, VmRequestEvent } from '@hcp/domain';
import { DecodedEvent, DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { eventContext } from '../../../src/platform/event-sourcing/event-context';
import { JobAdmission } from '../../../src/jobs/queue/job-admission';
import { VmJobDispatcherProjection } from '../../../src/vms/jobs/vm-job-dispatcher.projection';
import { JOB_QUEUE_CHANNEL, JobQueue } from '../../../src/jobs/queue/job-queue';
import { JobRepository } from '../../../src/jobs/job.repository';
import { migratedTestDatabase, MigratedDatabase } from '../../support/migrated-database';

/**
 * A VM request becomes a job twice over: the handler admits it at once (JobQueued, then its queue row),
 * and the job dispatcher derives the same from the VM event for a handler that died half-way.
 */
describe('job admission and the job dispatcher', () => {
  let database: MigratedDatabase;
  let ds: DataSource;
  let pool: Pool;
  let store: PostgresEventStore;
  let jobs: JobRepository;
  let queue: JobQueue;
  let dispatcher: VmJobDispatcherProjection;
  let position = 0n;
  /** The SQL texts the store's connections sent, in order. */
  const sent: string[] = [];

  beforeAll(async () => {
    database = await migratedTestDatabase('hcp_admission', 3);
    ds = database.ds;
    pool = new Pool({ connectionString: database.db.url, max: 3 });
    pool.on('error', () => undefined);
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: typeof query }).query = (...args) => {
        if (typeof args[0] === 'string') sent.push(args[0]);
        return query(...args);
      };
    });
    store = new PostgresEventStore({ pool, pollIntervalMs: 50 });
    jobs = new JobRepository(store, new DomainEventCodec(createHcpUpcasters()));
    queue = new JobQueue(ds);
    dispatcher = new VmJobDispatcherProjection(jobs, queue);
  });

  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await database?.close();
  });

  function request(): { vmId: string; event: VmRequestEvent } {
    const vmId = randomUUID();
    const data: VmCreateRequestedData = {
      vm_id: vmId,
      project_id: 'adm',
      job_id: randomUUID(),
      name: 'a',
      zone: 'local',
      image_id: 'i',
      flavor_id: 'f',
      resources: { vcpus: 1, ram_mb: 512, disk_gb: 10 },
      placement: { provider_id: 'p', cluster_id: 'c', image_ref: 't' },
      tags: {},
      metadata: {},
      ssh_keys: [],
      power_on: true,
    };
    return { vmId, event: decideVm(null, { type: 'create', data })[0] as VmRequestEvent };
  }
  const decoded = (vmId: string, event: VmRequestEvent): DecodedEvent => ({
    event,
    eventId: randomUUID(),
    streamId: `vm-${vmId}`,
    revision: 0n,
    position: ++position,
    at: new Date().toISOString(),
    context: { actor: 'alice', trace_id: 't-1' },
  });
  const row = async (jobId: string) => (await ds.query(`SELECT status FROM job_queue WHERE job_id = $1`, [jobId]))[0];

  it('admits a job at once: its JobQueued and a queue row a worker can lease', async () => {
    const { vmId, event } = request();
    await new JobAdmission(jobs, queue, ds).admit(
      jobQueuedFor(event, vmId, eventContext('alice', 't-1')),
      eventContext('alice', 't-1'),
    );
    expect(await row(event.data.job_id)).toEqual({ status: 'queued' });
    expect((await jobs.load(event.data.job_id)).state).toMatchObject({
      status: 'queued',
      resource_id: vmId,
      actor: 'alice',
    });
  });

  it('queues the job of a request whose handler died before admitting it', async () => {
    const { vmId, event } = request();
    await ds.transaction((tx) => dispatcher.apply([decoded(vmId, event)], tx));
    expect(await row(event.data.job_id)).toEqual({ status: 'queued' });
    expect((await jobs.load(event.data.job_id)).state).toMatchObject({ status: 'queued', trace_id: 't-1' });
  });

  it('leaves a job the handler admitted alone, even when it has run already', async () => {
    const { vmId, event } = request();
    await new JobAdmission(jobs, queue, ds).admit(
      jobQueuedFor(event, vmId, eventContext('alice', 't-1')),
      eventContext('alice', 't-1'),
    );
    await ds.query(`UPDATE job_queue SET status = 'done' WHERE job_id = $1`, [event.data.job_id]);
    await ds.transaction((tx) => dispatcher.apply([decoded(vmId, event)], tx));
    expect(await row(event.data.job_id)).toEqual({ status: 'done' });
  });

  it('writes the queue rows of a commit as one INSERT, and wakes the workers once they are in, once for all', async () => {
    const listener = new Client({ connectionString: database.db.url });
    await listener.connect();
    let wakeUps = 0;
    listener.on('notification', (n) => {
      if (n.channel === JOB_QUEUE_CHANNEL) wakeUps += 1;
    });
    await listener.query(`LISTEN ${JOB_QUEUE_CHANNEL}`);
    try {
      const admission = new JobAdmission(jobs, queue, ds);
      const openings = Array.from({ length: 5 }, () => {
        const { vmId, event } = request();
        const context = eventContext('alice', 't-1');
        return admission.opening(jobQueuedFor(event, vmId, context), context);
      });
      expect(openings.every((o) => o.rowCommitted)).toBe(true);
      const before = sent.length;
      // What a group commit of five creates writes: every job's event and queue row in one transaction.
      await store.appendMany(
        openings.flatMap((o) => o.writes.appends),
        { sqlWrites: openings.flatMap((o) => o.writes.sqlWrites ?? []) },
      );
      for (const o of openings) await admission.opened(o);
      // The five queue rows went as one statement.
      expect(
        sent
          .slice(before)
          .join('\n')
          .match(/INSERT INTO job_queue/g),
      ).toHaveLength(1);

      await waitUntil(() => wakeUps >= 1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(wakeUps).toBe(1);
      for (const o of openings) expect(await row(o.queued.data.job_id)).toEqual({ status: 'queued' });
    } finally {
      await listener.end();
    }
  });
});

async function waitUntil(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
