import { sleep } from './chaos-postgres';
import type { SimVm } from './proxmox-sim-process';
import type { LedgerEntry } from './workload';

export interface Reader {
  /** GET through any running HCP process, retried on 5xx and broken connections. */
  get(path: string, token: string): Promise<{ status: number; body: any }>;
  tenantToken: string;
  opsToken: string;
}

export interface Verdict {
  requests: number;
  accepted: number;
  refusedByCode: Record<string, number>;
  gaveUp: number;
  answersByStatus: Record<string, number>;
  jobsSucceeded: number;
  jobsFailed: number;
  failedByCode: Record<string, number>;
  unfinished: number;
  lost: number;
  duplicatedJobs: number;
  jobsNotInLedger: number;
  vmsAtProvider: number;
  vmsInHcp: number;
  providerDuplicated: number;
  orphanedAtProvider: number;
  missingAtProvider: number;
  powerStateDrift: number;
  vmsInTransition: number;
  /** The longest time from a key's first send to its 202: how long a retrying client waited. */
  longestAcceptMs: number;
  /** Accepted keys that were answered 409 "still in progress" first (their first request died). */
  keysHeldInProgress: number;
  details: string[];
}

const LIVE = new Set(['running', 'stopped']);
const TRANSITION = new Set(['provisioning', 'starting', 'stopping', 'rebooting', 'deleting']);

/** Waits (up to `timeoutMs`) until every job answered 202 is finished; the ids still open at the end. */
export async function settleJobs(reader: Reader, ledger: LedgerEntry[], timeoutMs: number): Promise<string[]> {
  let open = ledger.filter((e) => e.final?.status === 202);
  const deadline = Date.now() + timeoutMs;
  while (open.length > 0 && Date.now() < deadline) {
    const still: LedgerEntry[] = [];
    for (const entry of open) {
      const res = await reader.get(`/v1/projects/${entry.project}/jobs/${entry.jobIds[0]}`, reader.tenantToken);
      if (!(res.status === 200 && ['succeeded', 'failed'].includes(res.body?.status))) still.push(entry);
    }
    open = still;
    if (open.length > 0) await sleep(1_000);
  }
  return open.map((e) => e.jobIds[0] as string);
}

export function emptyVerdict(requests = 0): Verdict {
  return {
    requests,
    accepted: 0,
    refusedByCode: {},
    gaveUp: 0,
    answersByStatus: {},
    jobsSucceeded: 0,
    jobsFailed: 0,
    failedByCode: {},
    unfinished: 0,
    lost: 0,
    duplicatedJobs: 0,
    jobsNotInLedger: 0,
    vmsAtProvider: 0,
    vmsInHcp: 0,
    providerDuplicated: 0,
    orphanedAtProvider: 0,
    missingAtProvider: 0,
    powerStateDrift: 0,
    vmsInTransition: 0,
    longestAcceptMs: 0,
    keysHeldInProgress: 0,
    details: [],
  };
}

/** What the steal-vmid fault makes: another client's VM, taken a clone's id. Not HCP's, not an orphan. */
const OTHER_CLIENTS_VM = /^raced-\d+$/;

/**
 * `ownJobs`: jobs the suite itself opened outside the tenant stream (the provider chaos's drift VMs),
 * which are not "never answered".
 */
export async function verify(
  reader: Reader,
  ledger: LedgerEntry[],
  providerVms: SimVm[],
  ownJobs: ReadonlySet<string> = new Set(),
): Promise<Verdict> {
  const v = emptyVerdict(ledger.length);
  const details = v.details;
  v.vmsAtProvider = providerVms.length;
  const ledgerJobs = new Set<string>();
  for (const entry of ledger) {
    for (const a of entry.answers) v.answersByStatus[a] = (v.answersByStatus[a] ?? 0) + 1;
    for (const id of entry.jobIds) ledgerJobs.add(id);
    if (!entry.final) {
      v.gaveUp++;
      details.push(`gave up on ${entry.kind} ${entry.key} after answers ${entry.answers.join(',')}`);
      continue;
    }
    if (entry.final.status !== 202) {
      const code = entry.final.code ?? String(entry.final.status);
      v.refusedByCode[code] = (v.refusedByCode[code] ?? 0) + 1;
      if (entry.kind === 'create' && entry.answers.length > 1 && entry.final.status === 409) {
        details.push(
          `create ${entry.key} (${entry.name}) answered 409 "${entry.final.message}" on a retry (answers ${entry.answers.join(',')})`,
        );
      }
      continue;
    }
    v.accepted++;
    if (entry.answers.includes('409-in-progress')) {
      v.keysHeldInProgress++;
      const waited = ((entry.acceptedAt ?? entry.sentAt) - entry.sentAt) / 1000;
      details.push(
        `key ${entry.key} (${entry.kind}) answered "still in progress" for ${waited.toFixed(1)} s before its 202 (answers ${entry.answers.join(',')})`,
      );
    }
    v.longestAcceptMs = Math.max(v.longestAcceptMs, (entry.acceptedAt ?? entry.sentAt) - entry.sentAt);
    if (entry.jobIds.length > 1) {
      v.duplicatedJobs += entry.jobIds.length - 1;
      details.push(`duplicated: key ${entry.key} got jobs ${entry.jobIds.join(', ')}`);
    }
    const job = await reader.get(`/v1/projects/${entry.project}/jobs/${entry.jobIds[0]}`, reader.tenantToken);
    if (job.status === 404) {
      v.lost++;
      details.push(
        `lost: ${entry.kind} ${entry.key} answered 202 with job ${entry.jobIds[0]}, which HCP does not know`,
      );
      continue;
    }
    if (job.body?.status === 'succeeded') v.jobsSucceeded++;
    else if (job.body?.status === 'failed') {
      v.jobsFailed++;
      const code = job.body.error?.code ?? 'NONE';
      if (!v.failedByCode[code])
        details.push(
          `failed ${entry.kind} job ${entry.jobIds[0]} after ${job.body.attempts} attempt(s): ${code} ${job.body.error?.message}`,
        );
      v.failedByCode[code] = (v.failedByCode[code] ?? 0) + 1;
    } else {
      v.unfinished++;
      details.push(`unfinished: job ${entry.jobIds[0]} (${entry.kind}) is ${job.body?.status ?? job.status}`);
    }
    if (entry.kind === 'create') {
      const vm = await reader.get(`/v1/projects/${entry.project}/vms/${entry.vmId}`, reader.tenantToken);
      if (vm.status === 404) {
        v.lost++;
        details.push(`lost: create ${entry.key} answered 202 for VM ${entry.vmId}, which HCP does not know`);
      }
    }
  }

  const hcpJobs = await listAll(reader, '/v1/ops/jobs');
  for (const job of hcpJobs) {
    if (ledgerJobs.has(job.id) || ownJobs.has(job.id)) continue;
    v.jobsNotInLedger++;
    details.push(`job ${job.id} (${job.type} on ${job.resource_id}, ${job.status}) was never answered to the client`);
  }

  const hcpVms = await listAll(reader, '/v1/ops/vms');
  v.vmsInHcp = hcpVms.length;
  const hcpById = new Map(hcpVms.map((vm) => [vm.id as string, vm]));
  const names = new Map<string, number>();
  for (const vm of hcpVms)
    names.set(`${vm.project_id}/${vm.name}`, (names.get(`${vm.project_id}/${vm.name}`) ?? 0) + 1);
  for (const [name, count] of names) {
    if (count > 1) {
      v.duplicatedJobs += count - 1;
      details.push(`duplicated: ${count} HCP VMs named ${name}`);
    }
  }
  for (const vm of hcpVms) {
    if (TRANSITION.has(vm.status)) {
      v.vmsInTransition++;
      details.push(`VM ${vm.id} still ${vm.status} after the settle period`);
    }
  }

  const atProvider = new Map<string, SimVm[]>();
  const othersVms = providerVms.filter((pvm) => !pvm.hcp_id && OTHER_CLIENTS_VM.test(pvm.name ?? ''));
  if (othersVms.length > 0)
    details.push(`${othersVms.length} provider VM(s) of another client (steal-vmid fault), not counted`);
  for (const pvm of providerVms) {
    if (othersVms.includes(pvm)) continue;
    if (!pvm.hcp_id) {
      v.orphanedAtProvider++;
      details.push(`orphaned: provider VM ${pvm.vmid} on ${pvm.node} carries no HCP id`);
      continue;
    }
    atProvider.set(pvm.hcp_id, [...(atProvider.get(pvm.hcp_id) ?? []), pvm]);
  }
  for (const [hcpId, copies] of atProvider) {
    if (copies.length > 1) {
      v.providerDuplicated += copies.length - 1;
      details.push(
        `duplicated at provider: ${copies.length} VMs (${copies.map((c) => c.vmid).join(', ')}) for ${hcpId}`,
      );
    }
    const vm = hcpById.get(hcpId);
    if (!vm) {
      v.orphanedAtProvider += copies.length;
      details.push(`orphaned: provider VM ${copies[0]?.vmid} for ${hcpId}, which HCP lists as deleted or not at all`);
    } else if (LIVE.has(vm.status) && copies[0]?.status !== vm.status) {
      v.powerStateDrift++;
      details.push(`drift: VM ${hcpId} is ${vm.status} in HCP, ${copies[0]?.status} at the provider`);
    }
  }
  for (const vm of hcpVms) {
    if (LIVE.has(vm.status) && !atProvider.has(vm.id)) {
      v.missingAtProvider++;
      details.push(`orphaned: HCP VM ${vm.id} is ${vm.status} but the provider has no VM for it`);
    }
  }
  return v;
}

export async function listAll(reader: Reader, path: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await reader.get(`${path}${query}`, reader.opsToken);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
    items.push(...res.body.items);
    cursor = res.body.next_cursor;
  } while (cursor);
  return items;
}
