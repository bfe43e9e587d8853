/**
 * Creating a VM: a full clone of the image's template into the cluster's resource pool, folder and
 * datastore, sized by the flavor, carrying the HCP id in extraConfig from its first moment. Idempotent
 * by HCP id: a VM that carries it is adopted; a clone whose answer was lost meets DuplicateName on its
 * retry (the name is derived from the HCP id) and adopts the VM of that name when it is ours.
 */
import { HcpError, conflict } from '@hcp/domain';
import type { CallContext, CreateVmSpec } from '../spi/provider-driver';
import { type MoRef, morefOf } from './soap-envelope';
import type { VsphereCluster } from './vsphere-cluster';
import type { VsphereSettings } from './vsphere-config';
import { faultType } from './vsphere-faults';
import { type VmRecord, allVms, datacenterNames, findByInventoryPath, objectProperties } from './vsphere-inventory';
import { optionValues, tagOptions } from './vsphere-tags';
import { runTask } from './vsphere-tasks';
import { HCP_ID_KEY, findVm, reread, vmNameOf } from './vsphere-vm';

interface Placement {
  folder: MoRef;
  pool: MoRef | undefined;
  datastore: MoRef | undefined;
}

/** The existing VM of this HCP id, or a new clone. */
export async function findOrClone(
  cluster: VsphereCluster,
  spec: CreateVmSpec,
  settings: VsphereSettings,
  ctx: CallContext,
): Promise<VmRecord> {
  const vms = await allVms(cluster.client, ctx);
  const existing = vms.find((vm) => !vm.template && vm.extra[HCP_ID_KEY] === spec.hcp_id);
  if (existing) return existing;
  const name = vmNameOf(spec.hcp_id);
  const named = vms.find((vm) => vm.name === name);
  if (named) return adopt(cluster, spec, named, ctx);

  const template = await findTemplate(cluster, spec.image_ref, vms, ctx);
  const placement = await resolvePlacement(cluster, settings, template, ctx);
  try {
    const result = await runTask(
      cluster.client,
      'CloneVM_Task',
      template,
      {
        folder: placement.folder,
        name,
        spec: {
          location: { datastore: placement.datastore, pool: placement.pool },
          template: false,
          config: configSpec(cluster, spec, {}),
          powerOn: false,
        },
      },
      cluster.timing,
      ctx,
    );
    const ref = morefOf(result);
    const created = ref ? await vmByRef(cluster, ref, ctx) : await findVm(cluster, spec.hcp_id, ctx);
    if (!created) throw new HcpError('PROVIDER_UNAVAILABLE', 'the provider lost the VM it cloned', {});
    return ensureConfigured(cluster, spec, created, ctx);
  } catch (err) {
    const fault = faultType(err);
    if (fault !== 'DuplicateName' && fault !== 'FileAlreadyExists') throw err;
    // An earlier clone of ours whose answer was lost, or somebody else's VM of that name.
    const again = (await allVms(cluster.client, ctx)).find((vm) => vm.name === name);
    if (!again) throw err;
    return adopt(cluster, spec, again, ctx);
  }
}

/**
 * A VM named after this HCP id. It is ours when it carries the id, or carries none (a clone of ours
 * whose configuration did not land: nobody else names a VM after an HCP id); another id is CONFLICT.
 */
async function adopt(cluster: VsphereCluster, spec: CreateVmSpec, vm: VmRecord, ctx: CallContext): Promise<VmRecord> {
  const id = vm.extra[HCP_ID_KEY];
  if (id === spec.hcp_id) return vm;
  if (id === undefined) return ensureConfigured(cluster, spec, vm, ctx);
  throw conflict('the provider already has a VM of that name that HCP did not make', {
    provider: { fault: 'DuplicateName', moref: vm.ref.value },
  });
}

/**
 * Writes size and HCP keys onto a clone that lacks them. vCenter applies a clone spec's config; vcsim
 * (govmomi 0.52) drops it, and a clone adopted after a lost answer may predate it.
 */
async function ensureConfigured(
  cluster: VsphereCluster,
  spec: CreateVmSpec,
  vm: VmRecord,
  ctx: CallContext,
): Promise<VmRecord> {
  if (vm.extra[HCP_ID_KEY] === spec.hcp_id) return vm;
  await runTask(
    cluster.client,
    'ReconfigVM_Task',
    vm.ref,
    { spec: configSpec(cluster, spec, vm.extra) },
    cluster.timing,
    ctx,
  );
  return reread(cluster, vm, ctx);
}

function configSpec(cluster: VsphereCluster, spec: CreateVmSpec, current: Record<string, string>) {
  return {
    numCPUs: spec.vcpus,
    memoryMB: spec.ram_mb,
    extraConfig: optionValues({
      [HCP_ID_KEY]: spec.hcp_id,
      'hcp.project_id': spec.project_id,
      'hcp.name': spec.name,
      'hcp.cluster_id': cluster.clusterId,
      ...tagOptions(current, spec.tags ?? {}),
    }),
  };
}

async function vmByRef(cluster: VsphereCluster, ref: MoRef, ctx: CallContext): Promise<VmRecord | undefined> {
  const fake: VmRecord = { ref, name: '', extra: {}, power: undefined, template: false, addresses: [] };
  try {
    return await reread(cluster, fake, ctx);
  } catch (err) {
    if ((err as { code?: string }).code === 'NOT_FOUND') return undefined;
    throw err;
  }
}

/** The image's template: an inventory path (with `/`), or the name of a VM or template HCP did not make. */
async function findTemplate(
  cluster: VsphereCluster,
  imageRef: string,
  vms: VmRecord[],
  ctx: CallContext,
): Promise<MoRef> {
  if (imageRef.includes('/')) {
    const ref = await findByInventoryPath(cluster.client, imageRef, ctx);
    if (ref?.type === 'VirtualMachine') return ref;
  } else {
    const matches = vms.filter((vm) => vm.name === imageRef && vm.extra[HCP_ID_KEY] === undefined);
    if (matches.length === 1 && matches[0]) return matches[0].ref;
    if (matches.length > 1) {
      throw new HcpError(
        'PROVIDER_UNAVAILABLE',
        'the image is ambiguous on the provider',
        { provider: { image_ref: imageRef, matches: matches.length } },
        false,
      );
    }
  }
  throw new HcpError(
    'PROVIDER_UNAVAILABLE',
    'the image is not available on the provider',
    { provider: { image_ref: imageRef } },
    false,
  );
}

const placements = new WeakMap<VsphereSettings, Promise<Omit<Placement, 'pool'> & { pool?: MoRef }>>();

async function resolvePlacement(
  cluster: VsphereCluster,
  settings: VsphereSettings,
  template: MoRef,
  ctx: CallContext,
): Promise<Placement> {
  let resolved = placements.get(settings);
  if (!resolved) {
    resolved = resolveSettings(cluster, settings, ctx);
    placements.set(settings, resolved);
    resolved.catch(() => placements.delete(settings));
  }
  const p = await resolved;
  // Without a configured pool the clone goes where its template runs.
  const pool =
    p.pool ?? morefOf((await objectProperties(cluster.client, template, ['resourcePool'], ctx))?.get('resourcePool'));
  if (!pool) throw misconfigured('resource_pool', 'no resource pool is configured and the template has none');
  return { ...p, pool };
}

async function resolveSettings(cluster: VsphereCluster, settings: VsphereSettings, ctx: CallContext) {
  let dc = settings.datacenter;
  if (!dc) {
    const names = await datacenterNames(cluster.client, ctx);
    if (names.length !== 1 || !names[0])
      throw misconfigured('datacenter', `the provider has ${names.length} datacenters: name one`);
    dc = names[0];
  }
  const path = (value: string, under: string) =>
    value.includes('/') ? value.replace(/^\//, '') : `${dc}/${under}/${value}`;
  const find = async (field: string, p: string, type: string) => {
    const ref = await findByInventoryPath(cluster.client, p, ctx);
    if (!ref || ref.type !== type) throw misconfigured(field, `no ${type} at ${p}`);
    return ref;
  };
  const folder = await find('folder', settings.folder ? path(settings.folder, 'vm') : `${dc}/vm`, 'Folder');
  const pool = settings.resource_pool
    ? await find('resource_pool', path(settings.resource_pool, 'host'), 'ResourcePool')
    : settings.cluster
      ? await find('cluster', `${dc}/host/${settings.cluster}/Resources`, 'ResourcePool')
      : undefined;
  const datastore = settings.datastore
    ? await find('datastore', path(settings.datastore, 'datastore'), 'Datastore')
    : undefined;
  return { folder, pool, datastore };
}

/**
 * Whether the datacenter, folder, pool (or cluster) and datastore of the settings exist: INVALID_REQUEST
 * naming the setting when one does not (what ops see when they register or change the provider).
 */
export async function checkPlacement(
  cluster: VsphereCluster,
  settings: VsphereSettings,
  ctx: CallContext,
): Promise<void> {
  try {
    await resolveSettings(cluster, settings, ctx);
  } catch (err) {
    const provider = (err as HcpError).details?.provider as { setting?: string; message?: string } | undefined;
    if (!(err instanceof HcpError) || !provider?.setting) throw err;
    throw new HcpError('INVALID_REQUEST', `the vSphere ${provider.setting} of the settings does not exist`, {
      fields: [{ field: `settings.${provider.setting}`, problems: [provider.message ?? 'not found'] }],
    });
  }
}

/** The provider's settings name something vCenter does not have: an operator must fix them. */
function misconfigured(field: string, what: string): HcpError {
  return new HcpError(
    'PROVIDER_UNAVAILABLE',
    'the provider refused the request (its configuration does not allow it)',
    { provider: { setting: field, message: what } },
    false,
  );
}

/** extraConfig changes as a ReconfigVM_Task spec. */
export function extraConfigSpec(options: Record<string, string>) {
  return { extraConfig: optionValues(options) };
}
