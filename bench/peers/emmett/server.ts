/**
 * The Emmett peer: the bench's two VM calls served by a small service on @event-driven-io/emmett-postgresql,
 * used the way its documentation shows (its PostgreSQL event store, CommandHandler with optimistic
 * concurrency, an inline projection to a table), on a database of its own.
 *
 *   POST /v1/projects/:p/vms       decide against the project's quota stream, append the VM's creation
 *                                  and its job's queueing (one append), 202 { resource_id, job_id }
 *   GET  /v1/projects/:p/vms/:id   the projected row, 200
 *
 * EMMETT_MODE=emmett: one CommandHandler call per create (conflicting creates of one project retry).
 * EMMETT_MODE=emmett_group: the creates waiting on a project are decided in one CommandHandler call
 * with an array of handlers, one append per group (./project-lane.ts).
 *
 * No authentication (the bearer token the load sends is ignored, as the baseline ignores it). Usage:
 * node scripts/ts-run.js bench/peers/emmett/server.ts with DATABASE_URL, PORT, EMMETT_MODE.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { projections } from '@event-driven-io/emmett';
import { getPostgreSQLEventStore } from '@event-driven-io/emmett-postgresql';
import express, { type Request, type Response } from 'express';
import { Pool } from 'pg';
import { ProjectLanes } from './project-lane';
import { fitsQuota, handleQuota, type Quota, type QuotaEvent, type Resources } from './quota';
import { vmProjection } from './vm-projection';
import { CREATE_VM_TABLE, VM_TABLE } from './vm-table';

const connectionString = process.env.DATABASE_URL ?? '';
const mode = process.env.EMMETT_MODE === 'emmett_group' ? 'emmett_group' : 'emmett';
// The same pool size as HCP's and the baseline's.
const pool = new Pool({ connectionString, max: 20, application_name: `hcp-bench-${mode}` });
// An idle client the server ends (a restart, pg_terminate_backend) must not end the peer.
pool.on('error', () => undefined);
const eventStore = getPostgreSQLEventStore(connectionString, {
  projections: projections.inline([vmProjection]),
  connectionOptions: { pooled: true, pool },
});

/** The peer has no catalog: every flavor is the bench's `small`. */
const SMALL: Resources = { vcpus: 1, ram_mb: 1024, disk_gb: 10 };

interface CreateRequest {
  project: string;
  name: string;
  zone: string;
  image_id: string;
  flavor_id: string;
  tags: Record<string, string>;
}

type Outcome = { ok: true; vmId: string; jobId: string } | { ok: false };

/** What explains the per-create form's rate: decisions run (one per attempt) against creates answered. */
const stats = { decisions: 0, creates: 0, commandHandlerCalls: 0, inFlight: 0 };

/** One create's handler: the events it appends if the quota allows it, and where its outcome goes. */
function createHandler(req: CreateRequest, report: (o: Outcome) => void): (state: Quota) => QuotaEvent[] {
  return (state) => {
    stats.decisions++;
    if (!fitsQuota(state, SMALL)) {
      report({ ok: false });
      return [];
    }
    const vmId = randomUUID();
    const jobId = randomUUID();
    report({ ok: true, vmId, jobId });
    return [
      {
        type: 'VmCreationRequested',
        data: {
          vm_id: vmId,
          job_id: jobId,
          project_id: req.project,
          name: req.name,
          zone: req.zone,
          image_id: req.image_id,
          flavor_id: req.flavor_id,
          tags: req.tags,
          resources: SMALL,
          requested_at: new Date().toISOString(),
        },
      },
      { type: 'JobQueued', data: { job_id: jobId, vm_id: vmId, project_id: req.project, type: 'vm.create' } },
    ];
  };
}

async function createOne(req: CreateRequest): Promise<Outcome> {
  stats.commandHandlerCalls++;
  let outcome: Outcome = { ok: false };
  await handleQuota(
    eventStore,
    req.project,
    createHandler(req, (o) => (outcome = o)),
  );
  return outcome;
}

const lanes = new ProjectLanes<CreateRequest, Outcome>(async (project, group) => {
  stats.commandHandlerCalls++;
  const outcomes: Outcome[] = group.map(() => ({ ok: false }));
  await handleQuota(
    eventStore,
    project,
    group.map((req, i) => createHandler(req, (o) => (outcomes[i] = o))),
  );
  return outcomes;
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const text = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 200;

const app = express();
app.use(express.json());

app.get('/ping', (_req, res) => {
  res.json({ mode, ...stats });
});

app.post('/v1/projects/:project/vms', async (req: Request<{ project: string }>, res: Response) => {
  const body = (req.body ?? {}) as Record<string, unknown>;
  if (!text(body.name) || !text(body.zone) || !text(body.image_id) || !text(body.flavor_id)) {
    res.status(400).json({ error: { code: 'VALIDATION_FAILED', message: 'name, zone, image_id, flavor_id' } });
    return;
  }
  const create: CreateRequest = {
    project: req.params.project,
    name: body.name,
    zone: body.zone,
    image_id: body.image_id,
    flavor_id: body.flavor_id,
    tags: (body.tags && typeof body.tags === 'object' ? body.tags : {}) as Record<string, string>,
  };
  stats.inFlight++;
  try {
    const outcome = mode === 'emmett_group' ? await lanes.submit(create.project, create) : await createOne(create);
    if (!outcome.ok) {
      res.status(409).json({ error: { code: 'QUOTA_EXCEEDED', message: 'quota exceeded' } });
      return;
    }
    stats.creates++;
    res.status(202).json({ resource_id: outcome.vmId, job_id: outcome.jobId });
  } catch (err) {
    res.status(500).json({ error: { code: 'INTERNAL_ERROR', message: (err as Error).message.slice(0, 200) } });
  } finally {
    stats.inFlight--;
  }
});

app.get('/v1/projects/:project/vms/:id', async (req: Request<{ project: string; id: string }>, res: Response) => {
  if (!UUID.test(req.params.id)) {
    res.status(404).json({ error: { code: 'NOT_FOUND', message: 'no such VM' } });
    return;
  }
  const { rows } = await pool.query(`SELECT document FROM ${VM_TABLE} WHERE id = $1 AND project_id = $2`, [
    req.params.id,
    req.params.project,
  ]);
  if (rows.length === 0) {
    res.status(404).json({ error: { code: 'NOT_FOUND', message: 'no such VM' } });
    return;
  }
  res.json(rows[0].document);
});

async function main(): Promise<void> {
  await pool.query(CREATE_VM_TABLE);
  // Creates Emmett's schema now rather than under the first burst of appends.
  await eventStore.readStream('quota-startup');
  const server: Server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
  const stop = () => {
    server.close();
    void eventStore
      .close()
      .then(() => pool.end().catch(() => undefined))
      .finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
