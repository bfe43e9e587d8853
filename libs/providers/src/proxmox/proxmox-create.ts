/**
 * The steps of a create: clone the image's template, wait for the clone's lock, configure, size the
 * disk. Each step can be repeated by a retried create that found the VM of an earlier attempt (see
 * proxmox-vm-lookup.ts), so each checks what is already done. A VMID taken between `nextid` and
 * `clone` is retried with a new id.
 */
import { HcpError } from '@hcp/domain';
import type { CallContext, CreateVmSpec } from '../spi/provider-driver';
import type { ProxmoxCluster } from './proxmox-cluster';
import type { ProxmoxSettings } from './proxmox-config';
import { ProxmoxApiError, isVmMissing, isVmidTaken } from './proxmox-errors';
import { bootDiskOf, diskSizeOf } from './proxmox-format';
import { planClone } from './proxmox-placement';
import { pause, waitTask, withLockRetry } from './proxmox-tasks';
import {
  badAnswer,
  cloneParams,
  configChanges,
  desiredConfig,
  type ClusterResource,
  type VmConfig,
} from './proxmox-translate';
import { ids, locateVm, readVmConfig, type Located } from './proxmox-vm-lookup';

const GiB = 1024 ** 3;

export async function cloneFromTemplate(
  cluster: ProxmoxCluster,
  spec: CreateVmSpec,
  settings: ProxmoxSettings,
  ctx: CallContext,
): Promise<Located> {
  const { client } = cluster;
  for (let attempt = 1; ; attempt++) {
    const resources = (await client.get<ClusterResource[]>('/cluster/resources', {}, ctx)) ?? [];
    const plan = planClone(resources, spec.image_ref, settings);
    const newid = Number(await client.get<number | string>('/cluster/nextid', {}, ctx));
    if (!Number.isInteger(newid) || newid < 100) throw badAnswer('cluster/nextid');
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
      if (isVmidTaken(err) && attempt < cluster.timing.vmidAttempts) continue;
      if (outcomeUnknown(err)) {
        // The clone may have started before the connection broke: if so, it is ours.
        const found = await locateVm(cluster, spec.hcp_id, ctx);
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
  if (err instanceof ProxmoxApiError) return err.status === 0 || err.status >= 500;
  return err instanceof HcpError && err.code === 'PROVIDER_TIMEOUT';
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
