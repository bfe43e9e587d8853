/**
 * The steps of a create: clone the image's template, wait for the clone's lock, configure, size the
 * disk. Each step can be repeated by a retried create that found the VM of an earlier attempt (see
 * proxmox-vm-lookup.ts), so each checks what is already done. A VMID taken between `nextid` and
 * `clone` is retried with a new id.
 *
 * While Proxmox copies the disks, the new VM's config holds only `lock: clone` (no name, no
 * description), so nothing identifies it as ours. The node and VMID of every clone call are therefore
 * recorded on the job (`ctx.record('proxmox.clone', ...)`) before the call is sent: a record that fails
 * fails the create before anything is cloned. A create that finds no VM by its HCP id looks at that
 * VMID first (findStartedClone), in any process and with a fresh driver: a VMID still locked by a clone
 * is taken as ours in progress, and confirmed by its description once the lock goes.
 *
 * The driver also keeps those VMIDs in memory (cluster.startedClones) for calls made outside a job,
 * which have no `record`: the only callers that can retry a create without its facts (the driver
 * contract suite, tools calling the driver directly). Within a job the recorded fact makes it redundant.
 */
import { HcpError } from '@hcp/domain';
import { pause } from '../common/pause';
import type { CallContext, CreateVmSpec } from '../spi/provider-driver';
import type { ProxmoxCluster } from './proxmox-cluster';
import type { ProxmoxSettings } from './proxmox-config';
import { ProxmoxApiError, isVmMissing, isVmidTaken } from './proxmox-errors';
import { bootDiskOf, diskSizeOf, hcpIdOfDescription, sourceStoragesOf } from './proxmox-format';
import { planClone, templatesFor } from './proxmox-placement';
import { waitTask, withLockRetry } from './proxmox-tasks';
import {
  badAnswer,
  cloneParams,
  configChanges,
  desiredConfig,
  type ClusterResource,
  type VmConfig,
} from './proxmox-translate';
import { ids, locateVm, readVmConfig, type Located, type VmRef } from './proxmox-vm-lookup';

const GiB = 1024 ** 3;
/** The job fact that holds the node and VMID of the latest clone a create asked for. */
export const CLONE_FACT = 'proxmox.clone';

export async function cloneFromTemplate(
  cluster: ProxmoxCluster,
  spec: CreateVmSpec,
  settings: ProxmoxSettings,
  ctx: CallContext,
): Promise<Located> {
  const { client } = cluster;
  for (let attempt = 1; ; attempt++) {
    const resources = (await client.get<ClusterResource[]>('/cluster/resources', {}, ctx)) ?? [];
    const storages = await templateStorages(cluster, templatesFor(resources, spec.image_ref), ctx);
    const plan = planClone(resources, spec.image_ref, settings, storages);
    const newid = Number(await client.get<number | string>('/cluster/nextid', {}, ctx));
    if (!Number.isInteger(newid) || newid < 100) throw badAnswer('cluster/nextid');
    const started = { node: plan.targetNode, vmid: newid };
    await ctx.record?.(CLONE_FACT, started);
    rememberClone(cluster, spec.hcp_id, started);
    try {
      await withLockRetry(cluster, ctx, 'clone', async () => {
        const upid = await client.post(
          '/nodes/{node}/qemu/{vmid}/clone',
          { node: plan.templateNode, vmid: plan.templateVmid },
          ctx,
          {
            params: cloneParams(spec, settings, plan, newid),
          },
        );
        await waitTask(cluster, upid, plan.templateNode, ctx);
      });
    } catch (err) {
      if (isVmidTaken(err)) {
        // Someone else's VM holds that id: it is not a clone of ours.
        forgetClone(cluster, spec.hcp_id, started);
        if (attempt < cluster.timing.vmidAttempts) continue;
      }
      if (outcomeUnknown(err)) {
        // The clone may have started before the connection broke: if so, it is ours.
        const found =
          (await locateVm(cluster, spec.hcp_id, ctx)) ?? (await findStartedClone(cluster, spec.hcp_id, ctx));
        if (found) return found;
      }
      throw cloneError(err, spec);
    }
    return {
      node: plan.targetNode,
      vmid: newid,
      config: await readVmConfig(cluster, { node: plan.targetNode, vmid: newid }, ctx),
    };
  }
}

/** The storages of each template's volumes, read from their configs (the resources list has none). */
async function templateStorages(
  cluster: ProxmoxCluster,
  templates: ClusterResource[],
  ctx: CallContext,
): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>();
  for (const t of templates) {
    try {
      out.set(t.vmid!, sourceStoragesOf(await readVmConfig(cluster, { node: t.node!, vmid: t.vmid! }, ctx)));
    } catch (err) {
      // A template that vanished since the list is planned as one on local storage (kept on its node).
      if (!isVmMissing(err)) throw err;
    }
  }
  return out;
}

function rememberClone(cluster: ProxmoxCluster, hcpId: string, ref: VmRef): void {
  const list = cluster.startedClones.get(hcpId) ?? [];
  cluster.startedClones.set(hcpId, [...list.filter((r) => r.vmid !== ref.vmid), ref]);
}

function forgetClone(cluster: ProxmoxCluster, hcpId: string, ref: VmRef): void {
  const list = (cluster.startedClones.get(hcpId) ?? []).filter((r) => r.vmid !== ref.vmid);
  if (list.length > 0) cluster.startedClones.set(hcpId, list);
  else cluster.startedClones.delete(hcpId);
}

/** Forgets the clones of an HCP id whose VM is configured (or deleted): its marks identify it from now on. */
export function settleClones(cluster: ProxmoxCluster, hcpId: string): void {
  cluster.startedClones.delete(hcpId);
}

/**
 * A clone started for the HCP id (recorded on the job by an earlier attempt, or remembered by this
 * process) that is still in its lock window (config `lock: clone` and nothing else), or finished and
 * carrying the id; null when none. Remembered VMIDs that are gone or turned out to be someone else's are
 * forgotten; a recorded one is passed over the same way (it stays recorded, and is passed over again).
 */
export async function findStartedClone(
  cluster: ProxmoxCluster,
  hcpId: string,
  ctx: CallContext,
): Promise<Located | null> {
  const remembered = [...(cluster.startedClones.get(hcpId) ?? [])].reverse();
  const recorded = recordedClone(ctx);
  const candidates =
    recorded && !remembered.some((r) => r.vmid === recorded.vmid && r.node === recorded.node)
      ? [recorded, ...remembered]
      : remembered;
  for (const ref of candidates) {
    let config: VmConfig;
    try {
      config = await readVmConfig(cluster, ref, ctx);
    } catch (err) {
      if (!isVmMissing(err)) throw err;
      forgetClone(cluster, hcpId, ref);
      continue;
    }
    const owner = hcpIdOfDescription(config.description);
    if (owner === hcpId || (owner === undefined && config.lock === 'clone')) return { ...ref, config };
    forgetClone(cluster, hcpId, ref);
  }
  return null;
}

/**
 * For a delete that found no VM by its HCP id: a clone started for it (the failed create's recorded
 * VMID, see VmJobExecutor's cleanup) that is still copying, waited for until its lock goes (within the
 * call's deadline, else PROVIDER_TIMEOUT) and returned if it turns out ours; null when there is none,
 * or it vanished meanwhile. Proxmox refuses to destroy a VM while the clone holds it.
 */
export async function startedCloneToDelete(
  cluster: ProxmoxCluster,
  hcpId: string,
  ctx: CallContext,
): Promise<Located | null> {
  const started = await findStartedClone(cluster, hcpId, ctx);
  if (!started) return null;
  try {
    const loc = await waitUntilUnlocked(cluster, started, hcpId, ctx);
    return hcpIdOfDescription(loc.config.description) === hcpId ? loc : null;
  } catch (err) {
    if (err instanceof HcpError && err.code === 'CONFLICT' && err.details?.phase === 'creating') return null;
    throw err;
  }
}

/** The clone an earlier attempt of the job recorded, if its fact has the shape this driver writes. */
function recordedClone(ctx: CallContext): VmRef | null {
  const fact = ctx.recorded?.[CLONE_FACT] as { node?: unknown; vmid?: unknown } | undefined;
  if (!fact || typeof fact.node !== 'string' || !Number.isInteger(fact.vmid)) return null;
  return { node: fact.node, vmid: fact.vmid as number };
}

function cloneError(err: unknown, spec: CreateVmSpec): unknown {
  if (isVmidTaken(err)) {
    return new HcpError(
      'PROVIDER_UNAVAILABLE',
      'the provider kept giving away new VM ids before the clone',
      (err as HcpError).details,
    );
  }
  if (err instanceof ProxmoxApiError && /does not exist/i.test(err.allText)) {
    const provider = (err.details as { provider?: object } | undefined)?.provider;
    return new HcpError(
      'INVALID_REQUEST',
      'the image is not available on this cluster (its template is missing)',
      {
        provider: { ...provider, image_ref: spec.image_ref },
      },
      false,
    );
  }
  return err;
}

/** A failure after which the server may or may not have done the work. */
function outcomeUnknown(err: unknown): boolean {
  if (err instanceof ProxmoxApiError) return err.retryable && (err.status === 0 || err.status >= 500);
  return err instanceof HcpError && err.code === 'PROVIDER_TIMEOUT';
}

/**
 * The VM of this create: found by its HCP id, or a clone this process started for it, or a new clone;
 * in each case once its clone lock is gone and its description names the HCP id.
 */
export async function findOrClone(
  cluster: ProxmoxCluster,
  spec: CreateVmSpec,
  settings: ProxmoxSettings,
  ctx: CallContext,
): Promise<Located> {
  for (let round = 1; round <= 3; round++) {
    const found =
      (await locateVm(cluster, spec.hcp_id, ctx)) ??
      (await findStartedClone(cluster, spec.hcp_id, ctx)) ??
      (await cloneFromTemplate(cluster, spec, settings, ctx));
    const loc = await waitUntilUnlocked(cluster, found, spec.hcp_id, ctx);
    if (hcpIdOfDescription(loc.config.description) === spec.hcp_id) return loc;
    // A locked VMID from a clone call whose answer was lost turned out to be another client's clone.
    forgetClone(cluster, spec.hcp_id, loc);
  }
  throw new HcpError(
    'CONFLICT',
    `VM ${spec.hcp_id} could not be told apart from other clones`,
    { phase: 'creating' },
    true,
  );
}

/** Waits while a clone (ours, from an earlier attempt) still holds the VM. */
export async function waitUntilUnlocked(
  cluster: ProxmoxCluster,
  loc: Located,
  hcpId: string,
  ctx: CallContext,
): Promise<Located> {
  let delay = cluster.timing.taskPollMinMs;
  let config = loc.config;
  while (config.lock === 'clone' || config.lock === 'create') {
    await pause(delay, ctx, 'VM is locked (clone)');
    delay = Math.min(delay * 1.5, cluster.timing.taskPollMaxMs);
    try {
      config = await readVmConfig(cluster, loc, ctx);
    } catch (err) {
      // A clone that failed removes its target: the next attempt clones again.
      if (isVmMissing(err)) {
        throw new HcpError(
          'CONFLICT',
          `VM ${hcpId} disappeared while it was being created`,
          { phase: 'creating' },
          true,
        );
      }
      throw err;
    }
  }
  return { ...loc, config };
}

/** Brings the clone's config to what the spec asks; sends only what differs, so a retry is cheap. */
export async function configureVm(
  cluster: ProxmoxCluster,
  loc: Located,
  spec: CreateVmSpec,
  settings: ProxmoxSettings,
  ctx: CallContext,
): Promise<VmConfig> {
  const changes = configChanges(loc.config, desiredConfig(spec, settings, loc.config));
  if (Object.keys(changes).length === 0) return loc.config;
  await withLockRetry(cluster, ctx, 'configure', () =>
    cluster.client.put('/nodes/{node}/qemu/{vmid}/config', ids(loc), ctx, { params: changes, idempotent: true }),
  );
  return readVmConfig(cluster, loc, ctx);
}

export async function resizeDisk(
  cluster: ProxmoxCluster,
  loc: Located,
  spec: CreateVmSpec,
  settings: ProxmoxSettings,
  ctx: CallContext,
): Promise<void> {
  const disk = settings.disk ?? bootDiskOf(loc.config);
  if (!disk || typeof loc.config[disk] !== 'string') {
    throw new HcpError(
      'INVALID_REQUEST',
      "the image's template has no disk to size",
      {
        provider: { image_ref: spec.image_ref, ...(settings.disk ? { disk: settings.disk } : {}) },
      },
      false,
    );
  }
  const current = diskSizeOf(loc.config[disk] as string);
  // Proxmox cannot shrink disks: a flavor smaller than the template keeps the template's size.
  if (current !== undefined && current >= spec.disk_gb * GiB) return;
  await withLockRetry(cluster, ctx, 'resize', async () => {
    const upid = await cluster.client.put('/nodes/{node}/qemu/{vmid}/resize', ids(loc), ctx, {
      params: { disk, size: `${spec.disk_gb}G` },
    });
    await waitTask(cluster, upid, loc.node, ctx);
  });
  loc.config = await readVmConfig(cluster, loc, ctx);
}
