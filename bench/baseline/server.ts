/**
 * The baseline: what the same request costs without HCP. A bare node:http server with one pg pool (the
 * same size as HCP's) that answers each route with the one SQL statement at its heart, on the same
 * database and machine, so the table can show HCP's figure next to the floor this setup allows.
 *
 *   POST /v1/projects/:p/vms        one INSERT of the request (jsonb) into a table, 202
 *   GET  /v1/projects/:p/vms/:id    the read model's detail query (by id and project), 200
 *   GET  /v1/projects/:p/vms        the read model's first-page query (50 newest), 200
 *   POST /v1/projects/:p/jobs       a bare job queue: INSERT + NOTIFY; a worker loop in this process
 *                                   leases (FOR UPDATE SKIP LOCKED), "runs" (no-op) and completes jobs
 *
 * No authentication, validation, framework or events. Usage: node scripts/ts-run.js bench/baseline/server.ts
 * with DATABASE_URL and PORT.
 */
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';

const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 20, application_name: 'hcp-bench-baseline' });
const WORKER_CONCURRENCY = 16;

async function setup(): Promise<void> {
  await pool.query(`
    CREATE TABLE IF NOT EXISTS bench_baseline_requests (id uuid PRIMARY KEY, project_id text NOT NULL, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
    CREATE TABLE IF NOT EXISTS bench_baseline_jobs (id uuid PRIMARY KEY, project_id text NOT NULL, status text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp(), finished_at timestamptz);
    CREATE INDEX IF NOT EXISTS bench_baseline_jobs_queued ON bench_baseline_jobs (created_at) WHERE status = 'queued';`);
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : null);
      } catch (err) {
        reject(err);
      }
    });
    req.on('error', reject);
  });
}

const DETAIL = /^\/v1\/projects\/([^/]+)\/vms\/([0-9a-f-]{36})$/;
const LIST = /^\/v1\/projects\/([^/]+)\/vms$/;
const JOBS = /^\/v1\/projects\/([^/]+)\/jobs$/;

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://baseline');
  const detail = DETAIL.exec(url.pathname);
  const list = LIST.exec(url.pathname);
  const jobs = JOBS.exec(url.pathname);
  if (req.method === 'GET' && detail) {
    const m = detail;
    const { rows } = await pool.query(`SELECT state FROM vm_read_model WHERE id = $1 AND project_id = $2`, [
      m[2],
      m[1],
    ]);
    if (rows.length === 0) return send(res, 404, { error: 'not found' });
    return send(res, 200, rows[0].state);
  }
  if (req.method === 'GET' && list) {
    const m = list;
    const limit = Number(url.searchParams.get('limit') ?? 50);
    const { rows } = await pool.query(
      `SELECT id, created_at, state FROM vm_read_model WHERE project_id = $1 AND status <> 'deleted'
       ORDER BY created_at DESC, id DESC LIMIT $2`,
      [m[1], limit + 1],
    );
    return send(res, 200, {
      items: rows.slice(0, limit).map((r) => r.state),
      next_cursor: rows.length > limit ? 'more' : null,
    });
  }
  if (req.method === 'POST' && list) {
    const m = list;
    const body = await readBody(req);
    const id = randomUUID();
    await pool.query(`INSERT INTO bench_baseline_requests (id, project_id, body) VALUES ($1, $2, $3)`, [
      id,
      m[1],
      JSON.stringify(body),
    ]);
    return send(res, 202, { resource_id: id, job_id: id });
  }
  if (req.method === 'POST' && jobs) {
    const m = jobs;
    await readBody(req);
    const id = randomUUID();
    await pool.query(`INSERT INTO bench_baseline_jobs (id, project_id, status) VALUES ($1, $2, 'queued')`, [id, m[1]]);
    await pool.query(`SELECT pg_notify('bench_baseline_jobs', '')`);
    return send(res, 202, { job_id: id });
  }
  send(res, 404, { error: 'no route' });
}

/** The bare job worker: lease due jobs, run nothing, mark them succeeded; woken by NOTIFY, polls every 250 ms. */
async function worker(): Promise<void> {
  const listener = new Client({
    connectionString: process.env.DATABASE_URL,
    application_name: 'hcp-bench-baseline-listen',
  });
  await listener.connect();
  let wake: (() => void) | null = null;
  listener.on('notification', () => wake?.());
  await listener.query('LISTEN bench_baseline_jobs');
  let running = 0;
  const lease = async (): Promise<number> => {
    const free = WORKER_CONCURRENCY - running;
    if (free <= 0) return 0;
    const { rows } = await pool.query<{ id: string }>(
      `UPDATE bench_baseline_jobs SET status = 'leased' WHERE id IN (
         SELECT id FROM bench_baseline_jobs WHERE status = 'queued' ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [free],
    );
    for (const { id } of rows) {
      running++;
      pool
        .query(`UPDATE bench_baseline_jobs SET status = 'succeeded', finished_at = clock_timestamp() WHERE id = $1`, [
          id,
        ])
        .finally(() => {
          running--;
          wake?.();
        });
    }
    return rows.length;
  };
  for (;;) {
    const leased = await lease().catch(() => 0);
    if (leased > 0) continue;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => done(), 250);
      const done = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
      wake = done;
    });
  }
}

async function main(): Promise<void> {
  await setup();
  void worker();
  const server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => send(res, 500, { error: err.message }));
  });
  server.keepAliveTimeout = 60_000;
  server.listen(Number(process.env.PORT), '127.0.0.1', () =>
    process.stdout.write(`baseline listening on ${process.env.PORT}\n`),
  );
  const stop = () => {
    server.closeAllConnections();
    server.close(() => void pool.end().then(() => process.exit(0)));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

void main();
