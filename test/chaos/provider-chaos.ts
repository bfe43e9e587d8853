import { randomUUID } from 'node:crypto';
import { sleep } from './chaos-postgres';
import type { ProxmoxSimProcess, SimVm } from './proxmox-sim-process';
import { listAll, type Reader } from './verify';
import type { CatalogChoice } from './workload';

/**
 * Provider chaos (issue #15): faults at the Proxmox simulator while the tenant stream runs (5xx, slow
 * and dropped answers, work done but the answer lost, failing tasks, a stolen clone id), and VMs
 * stopped, started and deleted behind HCP's back through the Proxmox API. The changes behind HCP's
 * back are made on VMs of a project of their own that the tenant stream never touches, so the time
 * HCP takes to show each change is HCP's reconcile, not a tenant's request.
 */

/** Faults of a real Proxmox under stress, each on the calls where it hurts. */
const FAULT_MENU: Array<Record<string, unknown>> = [
  { kind: 'error', status: 500, message: 'got timeout', path_regex: '/status/(start|stop|shutdown)$' },
  { kind: 'error', status: 503, message: 'service unavailable', path_regex: '/cluster/resources' },
  { kind: 'error', status: 500, message: "can't lock file '/var/lock/qemu-server/lock.conf' - got timeout" },
  { kind: 'delay', ms: 4_000, path_regex: '/qemu/\\d+/config$' },
  { kind: 'delay', ms: 6_000, path: '/nodes/{node}/qemu/{vmid}/clone' },
  { kind: 'drop', path_regex: '/status/current$' },
  { kind: 'drop-after', method: 'POST', path: '/nodes/{node}/qemu/{vmid}/clone' },
  { kind: 'drop-after', method: 'POST', path_regex: '/status/(start|stop|shutdown)$' },
  { kind: 'drop-after', method: 'DELETE', path_regex: '/qemu/\\d+$' },
  { kind: 'task-fail', message: 'start failed: QEMU exited with code 1', path_regex: '/status/start$' },
  { kind: 'task-fail', message: 'clone failed: storage ceph-vm is full', path: '/nodes/{node}/qemu/{vmid}/clone' },
  { kind: 'steal-vmid', path: '/nodes/{node}/qemu/{vmid}/clone' },
];

export type BehindBackChange = 'stop' | 'start' | 'delete';

/** One change made behind HCP's back, and how long HCP took to show it (null: it never did). */
export interface DriftRecord {
  vm_id: string;
  change: BehindBackChange;
  expected: 'running' | 'stopped' | 'error';
  shown_after_ms: number | null;
}

export interface ProviderChaosFigures {
  faults_injected: number;
  faults_by_kind: Record<string, number>;
  changes_behind_back: number;
  /** Changes HCP showed within the watch time. */
  drift_repaired: number;
  /** `hcp_reconcile_drift_total` summed over the HCP processes, by kind. */
  drift_found_by_kind: Record<string, number>;
  /** How long HCP's read model disagreed with the provider after each change: p50 and max, ms. */
  disagreement_p50_ms: number | null;
  disagreement_max_ms: number | null;
  /** Provider VMs carrying an HCP id without a live VM, after the final reconcile pass. */
  orphans_left: number;
  /** Open orphans HCP lists at `GET /v1/ops/orphans` at the end. */
  orphans_listed: number;
  records: DriftRecord[];
  details: string[];
}

interface Tenant {
  project: string;
  token: string;
  urls: () => string[];
}

const DRIFT_POLL_MS = 250;
const ORPHAN_WAIT_MS = 30_000;

export class ProviderChaos {
  readonly figures: ProviderChaosFigures = {
    faults_injected: 0,
    faults_by_kind: {},
    changes_behind_back: 0,
    drift_repaired: 0,
    drift_found_by_kind: {},
    disagreement_p50_ms: null,
    disagreement_max_ms: null,
    orphans_left: 0,
    orphans_listed: 0,
    records: [],
    details: [],
  };
  private readonly watches: Promise<void>[] = [];
  /** Drift VMs whose last change HCP has not shown yet: they are left alone until it does. */
  private readonly watching = new Set<string>();
  private driftVms: string[] = [];
  /** Jobs this class opened (the drift VMs' creates): not jobs that a tenant was never answered. */
  readonly jobIds = new Set<string>();

  constructor(
    private readonly sim: ProxmoxSimProcess,
    private readonly tenant: Tenant,
    private readonly choice: CatalogChoice,
    private readonly watchMs: number,
  ) {}

  /** VMs of the drift project, made through HCP before any fault, running when this returns. */
  async prepare(count: number, reader: Reader): Promise<void> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const res = await this.tenantCall('POST', `/v1/projects/${this.tenant.project}/vms`, {
        name: `drift-${i}`,
        ...this.choice,
      });
      if (res.status !== 202) throw new Error(`drift VM create answered ${res.status}: ${JSON.stringify(res.body)}`);
      ids.push(res.body.resource_id);
      this.jobIds.add(res.body.job_id);
    }
    const deadline = Date.now() + 120_000;
    for (const id of ids) {
      while (Date.now() < deadline) {
        const vm = await reader.get(`/v1/projects/${this.tenant.project}/vms/${id}`, this.tenant.token);
        if (vm.body?.status === 'running') break;
        if (vm.body?.status === 'error') throw new Error(`drift VM ${id} failed: ${JSON.stringify(vm.body)}`);
        await sleep(500);
      }
    }
    this.driftVms = ids;
  }

  /** A random fault at the provider, firing one to three times. */
  async injectFault(): Promise<string> {
    const rule = FAULT_MENU[Math.floor(Math.random() * FAULT_MENU.length)]!;
    await this.sim.addFault({ ...rule, times: 1 + Math.floor(Math.random() * 3) });
    const kind = String(rule.kind);
    this.figures.faults_injected++;
    this.figures.faults_by_kind[kind] = (this.figures.faults_by_kind[kind] ?? 0) + 1;
    return `${kind} ${String(rule.path ?? rule.path_regex ?? 'any call')}`;
  }

  /**
   * Stops, starts or deletes a drift VM straight through the Proxmox API, then watches HCP until it shows
   * the change. Picks a VM that is settled at the provider (no lock) and not being watched already.
   */
  async changeBehindBack(): Promise<string | null> {
    const atProvider = new Map((await this.sim.vms()).filter((v) => v.hcp_id).map((v) => [v.hcp_id!, v]));
    const candidates = this.driftVms.filter((id) => !this.watching.has(id) && !atProvider.get(id)?.lock);
    if (candidates.length === 0) return null;
    const id = candidates[Math.floor(Math.random() * candidates.length)]!;
    const vm = atProvider.get(id);
    if (!vm) return null;
    const change: BehindBackChange =
      Math.random() < 0.15 && this.driftVms.length > 2 ? 'delete' : vm.status === 'running' ? 'stop' : 'start';
    const done = await this.apply(vm, change);
    if (!done) return null;
    if (change === 'delete') this.driftVms = this.driftVms.filter((d) => d !== id);
    const record: DriftRecord = {
      vm_id: id,
      change,
      expected: change === 'delete' ? 'error' : change === 'stop' ? 'stopped' : 'running',
      shown_after_ms: null,
    };
    this.figures.records.push(record);
    this.figures.changes_behind_back++;
    this.watches.push(this.watch(record, Date.now()));
    return `${change} of ${id} (vmid ${vm.vmid}) behind HCP's back`;
  }

  /** Waits for every watch, then counts what the reconcile loop found and what it left. */
  async finish(reader: Reader, baseUrls: string[], providerVms: () => Promise<SimVm[]>): Promise<void> {
    await Promise.all(this.watches);
    const shown = this.figures.records
      .map((r) => r.shown_after_ms)
      .filter((ms): ms is number => ms !== null)
      .sort((a, b) => a - b);
    this.figures.drift_repaired = shown.length;
    this.figures.disagreement_p50_ms = shown.length ? shown[Math.floor((shown.length - 1) / 2)]! : null;
    this.figures.disagreement_max_ms = shown.length ? shown[shown.length - 1]! : null;
    for (const r of this.figures.records.filter((x) => x.shown_after_ms === null))
      this.figures.details.push(`HCP never showed the ${r.change} of ${r.vm_id} (expected ${r.expected})`);
    for (const url of baseUrls) {
      for (const [kind, n] of Object.entries(await driftCounters(url)))
        this.figures.drift_found_by_kind[kind] = (this.figures.drift_found_by_kind[kind] ?? 0) + n;
    }
    // Failed creates whose own cleanup failed are removed by the loop's orphan policy: give it a few passes.
    const deadline = Date.now() + ORPHAN_WAIT_MS;
    do {
      this.figures.orphans_left = 0;
      this.figures.orphans_listed = 0;
      this.figures.details = this.figures.details.filter((d) => !d.startsWith('orphan') && !d.startsWith('left at'));
      await this.countOrphans(reader, providerVms);
      if (this.figures.orphans_left === 0 && this.figures.orphans_listed === 0) break;
      await sleep(2_000);
    } while (Date.now() < deadline);
  }

  private async countOrphans(reader: Reader, providerVms: () => Promise<SimVm[]>): Promise<void> {
    const listed = await reader.get('/v1/ops/orphans?limit=200', reader.opsToken);
    if (listed.status === 200) {
      const open = (listed.body.items as Array<{ status?: string; hcp_id?: string }>).filter(
        (o) => !o.status || !['destroyed', 'adopted', 'cleared'].includes(o.status),
      );
      this.figures.orphans_listed = open.length;
      for (const o of open.slice(0, 5)) this.figures.details.push(`orphan listed: ${JSON.stringify(o)}`);
    } else {
      this.figures.details.push(`GET /v1/ops/orphans answered ${listed.status}`);
    }
    const hcp = new Map((await listAll(reader, '/v1/ops/vms')).map((vm) => [vm.id as string, vm]));
    const jobs = new Map((await listAll(reader, '/v1/ops/jobs')).map((job) => [job.id as string, job]));
    for (const pvm of await providerVms()) {
      if (!pvm.hcp_id) continue;
      const record = hcp.get(pvm.hcp_id) as { status: string; last_job_id: string } | undefined;
      // A VM in error keeps its provider VM when a delete failed (the tenant deletes again); only a
      // failed create leaves a provider VM that nothing owns.
      const failedCreate = record?.status === 'error' && jobs.get(record.last_job_id)?.type === 'vm.create';
      if (!record || record.status === 'deleted' || failedCreate) {
        this.figures.orphans_left++;
        this.figures.details.push(
          `left at the provider: VM ${pvm.vmid} for ${pvm.hcp_id} (HCP: ${record?.status ?? 'none'})`,
        );
      }
    }
  }

  private async apply(vm: SimVm, change: BehindBackChange): Promise<boolean> {
    const base = `/nodes/${vm.node}/qemu/${vm.vmid}`;
    const steps: Array<[string, string]> =
      change === 'start'
        ? [['POST', `${base}/status/start`]]
        : change === 'stop'
          ? [['POST', `${base}/status/stop`]]
          : [
              ...(vm.status === 'running' ? ([['POST', `${base}/status/stop`]] as Array<[string, string]>) : []),
              ['DELETE', `${base}?purge=1&destroy-unreferenced-disks=1`],
            ];
    for (const [method, apiPath] of steps) {
      const res = await this.sim.pve(method, apiPath);
      if (res.status !== 200) {
        this.figures.details.push(
          `behind-the-back ${method} ${apiPath} answered ${res.status}: ${res.body.slice(0, 200)}`,
        );
        return false;
      }
      await this.waitTask(vm, res.body);
    }
    return true;
  }

  /** Proxmox answers a task id (UPID); the change is made when the task has stopped. */
  private async waitTask(vm: SimVm, body: string): Promise<void> {
    const upid = (JSON.parse(body) as { data?: unknown }).data;
    if (typeof upid !== 'string' || !upid.startsWith('UPID:')) return;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const res = await this.sim.pve('GET', `/nodes/${vm.node}/tasks/${encodeURIComponent(upid)}/status`);
      if (res.status === 200 && (JSON.parse(res.body) as { data?: { status?: string } }).data?.status === 'stopped')
        return;
      await sleep(100);
    }
  }

  private async watch(record: DriftRecord, changedAt: number): Promise<void> {
    this.watching.add(record.vm_id);
    try {
      await this.waitShown(record, changedAt);
    } finally {
      this.watching.delete(record.vm_id);
    }
  }

  private async waitShown(record: DriftRecord, changedAt: number): Promise<void> {
    const deadline = changedAt + this.watchMs;
    while (Date.now() < deadline) {
      const res = await this.tenantCall('GET', `/v1/projects/${this.tenant.project}/vms/${record.vm_id}`).catch(
        () => null,
      );
      if (res?.status === 200 && res.body?.status === record.expected) {
        record.shown_after_ms = Date.now() - changedAt;
        return;
      }
      await sleep(DRIFT_POLL_MS);
    }
  }

  private async tenantCall(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const urls = this.tenant.urls();
    let last = '';
    for (let attempt = 0; attempt < 20; attempt++) {
      const url = urls[attempt % urls.length];
      try {
        const res = await fetch(`${url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${this.tenant.token}`,
            ...(method === 'POST'
              ? { 'idempotency-key': `drift-${randomUUID()}`, 'content-type': 'application/json' }
              : {}),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await res.text();
        if (res.status < 500) return { status: res.status, body: text ? JSON.parse(text) : null };
        last = `${res.status} ${text.slice(0, 200)}`;
      } catch (error) {
        last = String(error);
      }
      await sleep(500);
    }
    throw new Error(`${method} ${path} kept failing: ${last}`);
  }
}

/** `hcp_reconcile_drift_total{kind="..."}` of one HCP process, by kind. */
async function driftCounters(baseUrl: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  try {
    const text = await (await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    for (const line of text.split('\n')) {
      const m = /^hcp_reconcile_drift_total\{[^}]*kind="([^"]+)"[^}]*\} (\d+(?:\.\d+)?)/.exec(line);
      if (m) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
    }
  } catch {
    // a process that is down reports nothing; the watches still measured what HCP showed
  }
  return out;
}
