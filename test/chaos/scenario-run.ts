import * as path from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { type ChaosPostgres, sleep } from './chaos-postgres';
import { type CrashRecord, HcpFleet } from './hcp-fleet';
import { ProviderChaos } from './provider-chaos';
import { ProxmoxSimProcess } from './proxmox-sim-process';
import { RecoveryClock } from './recovery';
import { RESULTS_DIR, RUN_STAMP, type ScenarioResult } from './report';
import type { ChaosContext, Scenario } from './scenarios';
import { emptyVerdict, type Reader, settleJobs, verify } from './verify';
import { type CatalogChoice, Workload } from './workload';

export interface RunOptions {
  index: number;
  root: string;
  postgres: ChaosPostgres;
  long: boolean;
  log(message: string): void;
  buildDir?: string;
}

const HCP_ENV = {
  // Short leases and backoff so jobs of a killed worker are taken over within the settle period.
  HCP_JOB_LEASE_MS: '3000',
  HCP_JOB_RETRY_BACKOFF_MS: '200',
  HCP_JOB_ATTEMPT_TIMEOUT_MS: '30000',
  HCP_WORKER_POLL_MS: '100',
  HCP_RATE_LIMIT_ACTOR_PER_MINUTE: '1000000',
  HCP_RATE_LIMIT_PROJECT_PER_MINUTE: '1000000',
};

export async function runScenario(scenario: Scenario, options: RunOptions): Promise<ScenarioResult> {
  const { postgres, log } = options;
  const dir = path.join(options.root, scenario.id);
  mkdirSync(dir, { recursive: true });
  await postgres.ensureRunning();
  const database = `chaos_${options.index}_${scenario.id.replace(/-/g, '_')}`;
  const databaseUrl = await postgres.createDatabase(database);
  const crashes: CrashRecord[] = [];
  const startFailures: string[] = [];
  const sim = await ProxmoxSimProcess.start(path.join(dir, 'pve'), 0.2);
  const fleet = new HcpFleet(
    path.join(dir, 'hcp'),
    databaseUrl,
    { ...HCP_ENV, ...scenario.env },
    {
      onCrash: (crash) => {
        crashes.push(crash);
        log(`CRASH of HCP ${crash.slot} (code ${crash.code}, signal ${crash.signal}):\n${indent(crash.logTail)}`);
      },
      onStartFailure: (slot, message) => startFailures.push(`HCP ${slot}: ${message.slice(-2_000)}`),
    },
    options.buildDir,
  );
  const started = Date.now();
  try {
    await fleet.start(scenario.instances);
    const projects = [0, 1, 2].map((i) => `chaos-${options.index}-p${i}`);
    // The drift project is the provider chaos's own: the tenant stream never touches its VMs.
    const driftProject = `chaos-${options.index}-drift`;
    const tenantToken = fleet.token(
      'chaos-tenant',
      Object.fromEntries([...projects, driftProject].map((p) => [p, 'admin'])),
    );
    const opsToken = fleet.token('chaos-ops', {}, ['infra-admin', 'cloud-operator']);
    const reader = makeReader(fleet, tenantToken, opsToken);
    const choice = await registerProxmox(reader, fleet, sim, opsToken, tenantToken);
    log(
      `  ${scenario.instances} HCP process(es) up, Proxmox registered (${Math.round((Date.now() - started) / 1000)} s)`,
    );

    const provider = scenario.provider
      ? new ProviderChaos(
          sim,
          { project: driftProject, token: tenantToken, urls: () => fleet.urls },
          choice,
          options.long ? 120_000 : 60_000,
        )
      : undefined;
    if (provider && scenario.provider) {
      await provider.prepare(scenario.provider.driftVms, reader);
      log(`  ${scenario.provider.driftVms} drift VMs running`);
    }

    const recovery = new RecoveryClock();
    const workload = new Workload({
      projects,
      concurrency: 4,
      maxVmsPerProject: 8,
      giveUpAfterMs: options.long ? 180_000 : 90_000,
      choice,
      urls: () => fleet.urls,
      token: () => tenantToken,
      onSuccess: (at) => recovery.answered(at),
    });
    const streamMs = options.long ? 120_000 : 20_000;
    const ctx: ChaosContext = {
      fleet,
      postgres,
      database,
      recovery,
      shutdowns: [],
      until: Date.now() + streamMs,
      long: options.long,
      log: (m) => log(`  ${m}`),
      notes: [],
      provider,
    };
    workload.start();
    let probing = true;
    const probed = probe(
      fleet,
      `/v1/projects/${projects[0]}/vms?limit=1`,
      tenantToken,
      () => probing,
      (at) => recovery.answered(at),
    );
    await scenario.inject(ctx);
    await sleep(Math.max(0, ctx.until - Date.now()));
    await sim.clearFaults();
    await workload.stop();
    // Whatever the injector left down comes back before the settle period: everything runs normally now.
    for (const slot of fleet.slots) {
      await slot.settled();
      if (!slot.running) await slot.start();
    }
    // A fault that ended near the end of the stream still gets its recovery measured.
    const probeDeadline = Date.now() + 60_000;
    while (recovery.waiting && Date.now() < probeDeadline) await sleep(100);
    probing = false;
    await probed;
    log(`  stream over: ${workload.ledger.length} requests; settling`);
    const open = await settleJobs(reader, workload.ledger, options.long ? 180_000 : 90_000);
    recovery.close();
    // The provider's truth is counted once the reconcile loop had its chance: after the changes behind
    // HCP's back were shown (or their watch ran out) and the orphans of failed creates were removed.
    if (provider)
      await provider.finish(
        reader,
        fleet.slots.map((s) => s.baseUrl),
        () => sim.vms(),
      );
    const verdict = await verify(reader, workload.ledger, await sim.vms(), provider?.jobIds);
    if (open.length > 0) verdict.details.push(`${open.length} job(s) still open after the settle period`);
    if (scenario.id === 'poison-event') await inspectPoison(ctx, reader, verdict.details);
    if (provider) verdict.details.push(...provider.figures.details);
    for (const slot of fleet.slots) ctx.notes.push(...(await metricNotes(slot.baseUrl, slot.index)));
    for (const slot of fleet.slots) {
      const ms = await slot.terminate(90_000);
      ctx.shutdowns.push(ms ?? null);
    }
    return {
      id: scenario.id,
      title: scenario.title,
      instances: scenario.instances,
      seconds: Math.round((Date.now() - started) / 1000),
      verdict,
      crashes,
      startFailures,
      recoveries: recovery.recoveries,
      longestRecoveryMs: recovery.longestMs,
      shutdowns: ctx.shutdowns,
      notes: ctx.notes,
      ledger: workload.ledger,
      ...(provider ? { provider: provider.figures } : {}),
    };
  } catch (error) {
    // The suite could not finish this scenario (HCP would not start, a registration was refused): report
    // it as such, with whatever crashed meanwhile, and go on with the next one.
    log(`  scenario ${scenario.id} could not run to its end: ${String(error)}`);
    return {
      id: scenario.id,
      title: scenario.title,
      instances: scenario.instances,
      seconds: Math.round((Date.now() - started) / 1000),
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      verdict: emptyVerdict(),
      crashes,
      startFailures,
      recoveries: [],
      longestRecoveryMs: 0,
      shutdowns: [],
      notes: [],
      ledger: [],
    };
  } finally {
    await fleet.close();
    sim.stop();
    for (const slot of fleet.slots) saveLog(`${scenario.id}-hcp${slot.index}`, slot.logs);
  }
}

/** What the poison left behind: dead letters, and appends to streams built from missing values. */
async function inspectPoison(ctx: ChaosContext, reader: Reader, details: string[]): Promise<void> {
  const letters = await reader.get('/v1/ops/dead-letters', reader.opsToken);
  details.push(
    letters.status === 200
      ? `dead letters: ${JSON.stringify((letters.body?.items ?? []).map((l: any) => l.projection ?? l.subscription ?? l))}`
      : `GET /v1/ops/dead-letters answered ${letters.status}`,
  );
  const strays = await ctx.postgres.query<{ stream_id: string; type: string }>(
    `SELECT stream_id, type FROM hcp_events WHERE stream_id ~ '-(undefined|null|NaN)$'`,
    [],
    ctx.database,
  );
  for (const s of strays) details.push(`stray append: ${s.type} on stream ${s.stream_id}`);
  ctx.notes.push(`${strays.length} append(s) to streams built from missing values`);
}

async function registerProxmox(
  reader: Reader,
  fleet: HcpFleet,
  sim: ProxmoxSimProcess,
  opsToken: string,
  tenantToken: string,
): Promise<CatalogChoice> {
  const post = async (p: string, body: unknown) => {
    const res = await fetch(`${fleet.urls[0]}${p}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${opsToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as any;
    if (res.status !== 201) throw new Error(`POST ${p} answered ${res.status}: ${JSON.stringify(json)}`);
    return json;
  };
  const provider = await post('/v1/ops/providers', {
    ...sim.providerBody,
    name: 'pve-chaos',
    settings: { bridge: 'vmbr0', address_wait_s: 0, full_clone: true, shutdown_timeout_s: 10 },
  });
  const cluster = await post('/v1/ops/clusters', {
    name: 'pve-chaos',
    provider_id: provider.id,
    placement_hints: { nodes: ['pve1', 'pve2'], storage: 'ceph-vm', pool: 'hcp' },
  });
  await post('/v1/ops/zones', { id: 'pve', name: 'PVE', cluster_ids: [cluster.id], policy: 'spread' });
  const image = await post('/v1/ops/images', {
    name: 'debian-12-pve',
    os: 'linux',
    min_disk_gb: 4,
    min_ram_mb: 512,
    visibility: 'public',
    provider_refs: { [cluster.id]: 'debian-12' },
  });
  const flavor = await post('/v1/ops/flavors', { name: 'pve-small', vcpus: 1, ram_mb: 1024, disk_gb: 10 });
  // The catalog reaches the tenant side through projections; wait until a create could be placed.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const zones = await reader.get('/v1/zones', tenantToken);
    if (zones.status === 200 && zones.body.items.some((z: { id: string }) => z.id === 'pve')) break;
    await sleep(200);
  }
  return { zone: 'pve', image_id: image.id, flavor_id: flavor.id };
}

function makeReader(fleet: HcpFleet, tenantToken: string, opsToken: string): Reader {
  return {
    tenantToken,
    opsToken,
    async get(p, token) {
      const deadline = Date.now() + 60_000;
      let last = '';
      for (let attempt = 0; Date.now() < deadline; attempt++) {
        const running = fleet.slots.filter((s) => s.running);
        const slot = running[attempt % Math.max(1, running.length)] ?? fleet.slots[0]!;
        try {
          const res = await fetch(`${slot.baseUrl}${p}`, {
            headers: { authorization: `Bearer ${token}` },
            signal: AbortSignal.timeout(15_000),
          });
          const text = await res.text();
          if (res.status < 500) return { status: res.status, body: text ? JSON.parse(text) : null };
          last = `${res.status} ${text.slice(0, 200)}`;
        } catch (error) {
          last = String(error);
        }
        await sleep(500);
      }
      throw new Error(`GET ${p} kept failing: ${last}`);
    },
  };
}

const WATCHED_METRICS = [
  'hcp_unhandled_errors_total',
  'hcp_unavailable_answers_total',
  'hcp_projection_dead_letters{',
  'hcp_projection_failures_total',
];

/** What HCP says about itself at the end (survived errors, 503s, dead letters), non-zero series only. */
async function metricNotes(baseUrl: string, index: number): Promise<string[]> {
  try {
    const text = await (await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    return text
      .split('\n')
      .filter((l) => WATCHED_METRICS.some((m) => l.startsWith(m)) && !/ 0$/.test(l))
      .map((l) => `HCP ${index} metric (since its last start): ${l}`);
  } catch (error) {
    return [`HCP ${index} /metrics unreadable: ${String(error)}`];
  }
}

/**
 * A client that only reads, four times a second through the backends in turn: the recovery clock stops
 * at its first 200 too, so recovery is measured even while every writer waits on a stuck key.
 */
async function probe(fleet: HcpFleet, p: string, token: string, going: () => boolean, ok: (at: number) => void) {
  for (let i = 0; going(); i++) {
    const url = fleet.urls[i % fleet.urls.length];
    try {
      const res = await fetch(`${url}${p}`, {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(2_000),
      });
      await res.arrayBuffer();
      if (res.status === 200) ok(Date.now());
    } catch {
      // down: the clock keeps running
    }
    await sleep(250);
  }
}

/** HCP's output next to the JSON report (gitignored), as evidence for whatever the report counts. */
function saveLog(name: string, text: string): void {
  writeFileSync(path.join(RESULTS_DIR, `${RUN_STAMP}-${name}.log`), text);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `      ${l}`)
    .join('\n');
}
