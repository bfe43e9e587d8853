import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createHcpUpcasters, JobQueued } from '@hcp/domain';
import { DomainEventCodec, PostgresEventStore } from '@hcp/eventstore';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { seededChoice } from '../support/catalog';
import { HcpProcess } from '../support/hcp-process';
import { createTestDatabase, TestDatabase } from '../support/test-database';

interface DeadLetterView {
  id: string;
  projection: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  error: string;
}

/**
 * Issue #13: one event the audit projection could not apply stopped `/v1/ops/audit`, the log sink and
 * Kafka for good. Now such an event becomes a dead letter ops can list, retry and skip, and the trail
 * goes on behind it.
 */
describe('projection dead letters', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let pool: Pool;
  let store: PostgresEventStore;
  let ops: ApiClient;
  let auditor: ApiClient;
  const codec = new DomainEventCodec(createHcpUpcasters());

  beforeAll(async () => {
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '0' } });
    ops = new ApiClient(hcp.baseUrl, hcp.token('olga', {}, ['cloud-operator']));
    auditor = new ApiClient(hcp.baseUrl, hcp.token('audrey', {}, ['security-auditor']));
    // HCP's own event store (DATABASE_URL without EventStoreDB: the embedded store in the same database).
    pool = new Pool({ connectionString: db.url, max: 2 });
    store = new PostgresEventStore({ pool });
  });

  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
  });

  /** An ops request (every ops request is audited) with its own trace id, and its audit record. */
  const auditedRequest = async (traceId: string) => {
    expect((await ops.get('/v1/ops/projections', { 'x-request-id': traceId })).status).toBe(200);
  };
  const inAuditTrail = (traceId: string) =>
    eventually(async () => {
      const res = await auditor.get('/v1/ops/audit?actor=olga&limit=200');
      return res.body.items.find((r: { trace_id: string }) => r.trace_id === traceId);
    }, `the audit record of ${traceId}`);
  const deadLetters = async (query: string): Promise<DeadLetterView[]> => {
    const res = await ops.get(`/v1/ops/dead-letters?${query}`);
    expect(res.status).toBe(200);
    return res.body.items;
  };

  it('keeps the audit trail flowing after an unauthenticated request with a 201-character project id', async () => {
    const before = await deadLetters('projection=audit');
    const refused = await new ApiClient(hcp.baseUrl).get(`/v1/projects/${'p'.repeat(201)}/vms`, {
      'x-request-id': 'trace-long-project',
    });
    expect(refused.status).toBe(401);

    await auditedRequest('trace-after-long-project');
    await inAuditTrail('trace-after-long-project');
    // The refusal is either in the trail (recorded values are bounded) or a dead letter: never a stop.
    const refusalAudited = (await auditor.get('/v1/ops/audit?limit=200')).body.items.some(
      (r: { trace_id: string }) => r.trace_id === 'trace-long-project',
    );
    const after = await deadLetters('projection=audit');
    expect(refusalAudited || after.length > before.length).toBe(true);
  });

  it('dead-letters an event the audit projection cannot apply, goes on, and lets ops retry and skip it', async () => {
    // A job whose resource id is no UUID: the audit projection's audit_jobs row refuses it, whatever
    // else is bounded upstream. Appended straight to the store, as a release with a bug would have.
    const jobId = randomUUID();
    const poison: JobQueued = {
      type: 'JobQueued',
      version: 1,
      data: {
        job_id: jobId,
        project_id: 'dlq',
        type: 'vm.start',
        resource_id: 'not-a-uuid',
        trace_id: 'trace-poison',
        actor: 'e2e',
        params: {},
      },
    };
    const eventId = randomUUID();
    await store.append(
      `job-${jobId}`,
      [
        codec.encode(
          poison,
          { actor: 'e2e', trace_id: 'trace-poison', occurred_at: new Date().toISOString() },
          eventId,
        ),
      ],
      'no_stream',
    );

    // The trail goes on behind it.
    await auditedRequest('trace-after-poison');
    await inAuditTrail('trace-after-poison');

    const letter = await eventually(
      async () => (await deadLetters('projection=audit&status=open')).find((d) => d.event_id === eventId),
      'the poison event listed as an open dead letter of the audit projection',
    );
    expect(letter).toMatchObject({ projection: 'audit', event_type: 'JobQueued', status: 'open' });
    expect(letter.attempts).toBeGreaterThanOrEqual(1);

    const projections = (await ops.get('/v1/ops/projections')).body.items;
    expect(projections.find((p: { name: string }) => p.name === 'audit').dead_letters).toBeGreaterThanOrEqual(1);
    const metrics = await (await fetch(`${hcp.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/hcp_projection_dead_letters_total\{projection="audit"\} [1-9]/);

    // Retried, it still fails: open, one more attempt, the new error.
    const retried = await ops.post(`/v1/ops/dead-letters/${letter.id}/retry`, undefined, {
      'x-request-id': 'trace-dead-letter-retry',
    });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: letter.id, status: 'open', attempts: letter.attempts + 1 });

    // Skipped: an explicit ops decision, in the audit trail like any ops request.
    const skipped = await ops.post(`/v1/ops/dead-letters/${letter.id}/skip`, undefined, {
      'x-request-id': 'trace-dead-letter-skip',
    });
    expect(skipped.status).toBe(200);
    expect(skipped.body).toMatchObject({ id: letter.id, status: 'skipped' });
    expect((await deadLetters('status=skipped')).map((d) => d.id)).toContain(letter.id);
    expect((await deadLetters('projection=audit&status=open')).map((d) => d.id)).not.toContain(letter.id);
    expect(await inAuditTrail('trace-dead-letter-retry')).toMatchObject({ target: { id: letter.id } });
    expect(await inAuditTrail('trace-dead-letter-skip')).toMatchObject({ target: { id: letter.id } });
  });

  it('dead-letters a malformed VmCreateRequested in every projection that reads it, and new creates still flow', async () => {
    // Issue #14: a create request with a malformed body (no job id, a number for the VM id) appended
    // straight to the store stalled seven projections and left a `job-undefined` stream behind. Now it
    // fails its schema when read: each reader dead-letters it at once and goes on.
    const vmId = randomUUID();
    const eventId = randomUUID();
    await store.append(
      `vm-${vmId}`,
      [
        {
          id: eventId,
          type: 'VmCreateRequested',
          data: { vm_id: 42, project_id: 'poisoned', name: 'bad' },
          metadata: {
            schema_version: 1,
            actor: 'e2e',
            trace_id: 'trace-malformed',
            occurred_at: new Date().toISOString(),
          },
        },
      ],
      'no_stream',
    );
    // The same mistake through the codec is refused before anything is written.
    expect(() =>
      codec.encode(
        { type: 'VmCreateRequested', version: 1, data: { vm_id: vmId } },
        { actor: 'e2e', trace_id: 't', occurred_at: new Date().toISOString() },
      ),
    ).toThrow('VmCreateRequested event data fails its schema at');

    const tenant = new ApiClient(hcp.baseUrl, hcp.token('tina', { dlq: 'admin' }));
    const created = await tenant.post('/v1/projects/dlq/vms', {
      name: 'after-poison',
      zone: 'local',
      ...(await seededChoice(tenant)),
    });
    expect(created.status).toBe(202);
    const job = await jobFinished(tenant, 'dlq', created.body.job_id);
    expect(job.status).toBe('succeeded');
    expect((await tenant.get(`/v1/projects/dlq/jobs/${created.body.job_id}`)).status).toBe(200);
    const listed = await eventually(async () => {
      const items = (await tenant.get('/v1/projects/dlq/vms')).body.items as Array<{ id: string; status: string }>;
      return items.find((vm) => vm.id === created.body.resource_id && vm.status === 'running');
    }, 'the new VM in the list');
    expect(listed).toBeDefined();

    const letters = await eventually(async () => {
      const open = (await deadLetters('status=open&limit=100')).filter((d) => d.event_id === eventId);
      return open.some((d) => d.projection === 'job-dispatcher') ? open : undefined;
    }, 'the malformed event dead-lettered by the job dispatcher');
    for (const letter of letters) {
      expect(letter).toMatchObject({ event_type: 'VmCreateRequested', attempts: 1 });
      expect(letter.error).toBe(
        'EventSchemaViolation: VmCreateRequested event data fails its schema at vm_id: expected string',
      );
    }
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM hcp_events WHERE stream_id ~ '(^|-)(undefined|null)(-|$)' OR stream_id ~ '-$'`,
    );
    expect(rows[0].n).toBe(0);
    const metrics = await eventually(async () => {
      const text = await (await fetch(`${hcp.baseUrl}/metrics`)).text();
      return /hcp_projection_dead_letters\{projection="job-dispatcher"\} [1-9]/.test(text) ? text : undefined;
    }, 'the open dead letter of the job dispatcher in /metrics');
    expect(metrics).toMatch(/hcp_projection_failures_total\{projection="job-dispatcher"\} [1-9]/);
    expect(metrics).toMatch(/hcp_projection_lag_events\{projection="job-dispatcher"\} \d/);
  });

  it('refuses a malformed id, answers NOT_FOUND for an unknown one, and keeps the routes from tenants', async () => {
    expect((await ops.post('/v1/ops/dead-letters/not-a-uuid/skip')).status).toBe(400);
    expect((await ops.post(`/v1/ops/dead-letters/${randomUUID()}/retry`)).status).toBe(404);
    expect((await ops.get('/v1/ops/dead-letters?status=lost')).status).toBe(400);
    const tenant = new ApiClient(hcp.baseUrl, hcp.token('tom', { dlq: 'owner' }));
    expect((await tenant.get('/v1/ops/dead-letters')).status).toBe(403);
  });
});
