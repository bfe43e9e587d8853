/**
 * The event flow of the isolated lag scenario, appended by a process of its own (never the harness,
 * whose checkpoint poller it would otherwise delay and be delayed by):
 *
 *   node scripts/ts-run.js bench/children/synthetic-flow.ts <database url> <catalog refs JSON> <jobs/s> <duration ms>
 *
 * Prints {"jobs", "events", "ticksLate"} when done.
 */
import { randomUUID } from 'node:crypto';
import { Client, escapeLiteral } from 'pg';

interface CatalogRefs {
  imageId: string;
  flavorId: string;
  providerId: string;
  clusterId: string;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The event flow of `jobsPerSecond` create jobs, appended straight into hcp_events from one connection
 * (so position order and commit order agree, as the store's allocation lock ensures): every 10 ms, the
 * jobs due start (VmCreateRequested, JobQueued) and the jobs started in the previous tick finish
 * (JobStarted, VmProvisioned, JobSucceeded). Each tick is one transaction, followed by the NOTIFY the
 * store's CommitNotifier would send. Used to measure projections in isolation, without HCP's write path.
 */
async function syntheticJobFlow(
  url: string,
  refs: CatalogRefs,
  jobsPerSecond: number,
  durationMs: number,
): Promise<{ jobs: number; events: number; ticksLate: number }> {
  const client = new Client({ connectionString: url, application_name: 'hcp-bench-synthetic-flow' });
  await client.connect();
  const TICK_MS = 10;
  const started = Date.now();
  let jobs = 0;
  let events = 0;
  let ticksLate = 0;
  let inFlight: Array<{ vm: string; job: string; project: string }> = [];
  try {
    for (let tick = 1; ; tick++) {
      const now = Date.now();
      const elapsed = now - started;
      const finishing = inFlight;
      inFlight = [];
      if (elapsed < durationMs) {
        const due = Math.floor((elapsed / 1000) * jobsPerSecond) - jobs;
        for (let i = 0; i < due; i++)
          inFlight.push({ vm: randomUUID(), job: randomUUID(), project: `p-${(jobs + i) % 100}` });
        jobs += Math.max(0, due);
      } else if (finishing.length === 0) {
        break;
      }
      const rows: string[] = [];
      const at = new Date().toISOString();
      const meta = escapeLiteral(
        JSON.stringify({ schema_version: 1, trace_id: 'bench-flow', actor: 'bench', occurred_at: at }),
      );
      const add = (stream: string, revision: number, type: string, data: unknown, id: string = randomUUID()) => {
        rows.push(
          `(${escapeLiteral(stream)}, ${revision}, ${escapeLiteral(id)}::uuid, ${escapeLiteral(type)}, ${escapeLiteral(JSON.stringify(data))}::jsonb, ${meta}::jsonb)`,
        );
      };
      for (const j of inFlight) {
        add(`vm-${j.vm}`, 0, 'VmCreateRequested', {
          vm_id: j.vm,
          project_id: j.project,
          job_id: j.job,
          name: `flow-${j.vm.slice(0, 8)}`,
          zone: 'local',
          image_id: refs.imageId,
          flavor_id: refs.flavorId,
          resources: { vcpus: 1, ram_mb: 1024, disk_gb: 10 },
          placement: { provider_id: refs.providerId, cluster_id: refs.clusterId, image_ref: 'template/debian-12' },
          tags: {},
          metadata: {},
          ssh_keys: [],
          power_on: true,
        });
        add(
          `job-${j.job}`,
          0,
          'JobQueued',
          {
            job_id: j.job,
            project_id: j.project,
            type: 'vm.create',
            resource_id: j.vm,
            trace_id: 'bench-flow',
            actor: 'bench',
            params: {},
          },
          j.job,
        );
      }
      for (const j of finishing) {
        add(`job-${j.job}`, 1, 'JobStarted', { attempt: 1, worker: 'bench' });
        add(`vm-${j.vm}`, 1, 'VmProvisioned', {
          job_id: j.job,
          power_state: 'running',
          addresses: [{ type: 'ipv4', address: '10.9.9.9', nic: 'net0' }],
          provider_ref: {},
        });
        add(`job-${j.job}`, 2, 'JobSucceeded', { attempt: 1 });
      }
      if (rows.length) {
        await client.query(
          `INSERT INTO hcp_events (stream_id, revision, event_id, type, data, metadata) VALUES ${rows.join(',\n')}`,
        );
        await client.query(`SELECT pg_notify('public_hcp_events', '')`);
        events += rows.length;
      }
      const next = started + tick * TICK_MS;
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      else ticksLate++;
    }
  } finally {
    await client.end();
  }
  return { jobs, events, ticksLate };
}

const [url, refs, rate, duration] = process.argv.slice(2);
syntheticJobFlow(url!, JSON.parse(refs!) as CatalogRefs, Number(rate), Number(duration))
  .then((result) => process.stdout.write(`${JSON.stringify(result)}\n`))
  .catch((err: Error) => {
    process.stderr.write(`${err.stack}\n`);
    process.exit(1);
  });
