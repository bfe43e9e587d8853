/**
 * Reading vCenter's inventory through the PropertyCollector: every VM (one ContainerView over the
 * root folder, the properties HCP needs in one pass, paged) and single objects' properties. A VM
 * belongs to HCP when its extraConfig carries `hcp.id`.
 */
import type { CallContext, VmAddress } from '../spi/provider-driver';
import { type MoRef, type SoapFields, child, list, morefOf, text, typed, xsiType } from './soap-envelope';
import type { VsphereClient } from './vsphere-client';
import { badAnswer } from './vsphere-faults';

export interface ObjectProps {
  obj: MoRef;
  props: Map<string, unknown>;
}

export const VM_PATHS = [
  'name',
  'config.extraConfig',
  'config.template',
  'runtime.powerState',
  'guest.net',
  'resourcePool',
  'parent',
];

export type VspherePower = 'poweredOn' | 'poweredOff' | 'suspended';

export interface VmRecord {
  ref: MoRef;
  name: string;
  /** extraConfig keys and values (string values only). */
  extra: Record<string, string>;
  power: VspherePower | undefined;
  template: boolean;
  addresses: VmAddress[];
}

/** Every object of `specSet`, following ContinueRetrievePropertiesEx until the last page. */
export async function retrieveProperties(
  client: VsphereClient,
  specSet: SoapFields,
  ctx: CallContext,
): Promise<ObjectProps[]> {
  const { propertyCollector } = await client.serviceContent(ctx);
  const out: ObjectProps[] = [];
  let answer = await client.call(
    'RetrievePropertiesEx',
    propertyCollector,
    { specSet, options: { maxObjects: 500 } },
    ctx,
  );
  for (;;) {
    for (const o of list(child(answer, 'objects'))) {
      const obj = morefOf(child(o, 'obj'));
      if (!obj) throw badAnswer('object without reference', 'RetrievePropertiesEx');
      const props = new Map<string, unknown>();
      for (const p of list(child(o, 'propSet'))) {
        const name = text(child(p, 'name'));
        if (name) props.set(name, child(p, 'val'));
      }
      out.push({ obj, props });
    }
    const token = text(child(answer, 'token'));
    if (!token) return out;
    answer = await client.call('ContinueRetrievePropertiesEx', propertyCollector, { token }, ctx);
  }
}

/** Some properties of one object; undefined when it no longer exists. */
export async function objectProperties(
  client: VsphereClient,
  obj: MoRef,
  paths: string[],
  ctx: CallContext,
): Promise<Map<string, unknown> | undefined> {
  const found = await retrieveProperties(
    client,
    { propSet: { type: obj.type, pathSet: paths }, objectSet: { obj, skip: false } },
    ctx,
  );
  return found[0]?.props;
}

/** Every VM (and template) in vCenter with the properties of VM_PATHS. */
export async function allVms(client: VsphereClient, ctx: CallContext): Promise<VmRecord[]> {
  const { viewManager, rootFolder } = await client.serviceContent(ctx);
  const view = morefOf(
    await client.call(
      'CreateContainerView',
      viewManager,
      { container: rootFolder, type: 'VirtualMachine', recursive: true },
      ctx,
    ),
  );
  if (!view) throw badAnswer('container view', 'CreateContainerView');
  try {
    const objects = await retrieveProperties(
      client,
      {
        propSet: { type: 'VirtualMachine', pathSet: VM_PATHS },
        objectSet: {
          obj: view,
          skip: true,
          selectSet: typed('TraversalSpec', { name: 'view', type: 'ContainerView', path: 'view', skip: false }),
        },
      },
      ctx,
    );
    return objects.map(vmRecordOf);
  } finally {
    // Views live as long as the session; one left behind (a failed destroy) goes with it.
    void client.call('DestroyView', view, {}, ctx).catch(() => undefined);
  }
}

export function vmRecordOf({ obj, props }: ObjectProps): VmRecord {
  const power = text(props.get('runtime.powerState'));
  return {
    ref: obj,
    name: text(props.get('name')) ?? '',
    extra: extraConfigOf(props.get('config.extraConfig')),
    power: power === 'poweredOn' || power === 'poweredOff' || power === 'suspended' ? power : undefined,
    template: text(props.get('config.template')) === 'true',
    addresses: guestAddressesOf(props.get('guest.net')),
  };
}

/** ArrayOfOptionValue → key/value (string values; others are not HCP's). */
export function extraConfigOf(node: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const option of list(child(node, 'OptionValue'))) {
    const key = text(child(option, 'key'));
    const value = child(option, 'value');
    const type = xsiType(value);
    if (!key || (type !== undefined && type !== 'string')) continue;
    out[key] = text(value) ?? '';
  }
  return out;
}

/**
 * ArrayOfGuestNicInfo → addresses VMware Tools reports, per NIC (its network name, else its device
 * key); loopback and link-local addresses are left out as HCP reports only reachable ones.
 */
export function guestAddressesOf(node: unknown): VmAddress[] {
  const out: VmAddress[] = [];
  for (const nicInfo of list(child(node, 'GuestNicInfo'))) {
    const nic = text(child(nicInfo, 'network')) || `nic-${text(child(nicInfo, 'deviceConfigId')) ?? '0'}`;
    for (const ip of list(child(nicInfo, 'ipAddress'))) {
      const address = text(ip);
      if (!address) continue;
      const type = address.includes(':') ? 'ipv6' : 'ipv4';
      if (!isReachable(address, type)) continue;
      out.push({ type, address, nic });
    }
  }
  return out;
}

function isReachable(address: string, type: 'ipv4' | 'ipv6'): boolean {
  if (type === 'ipv4') return /^\d+\.\d+\.\d+\.\d+$/.test(address) && !/^(127\.|169\.254\.|0\.)/.test(address);
  const a = address.toLowerCase();
  return !(a === '::1' || a === '::' || /^fe[89ab]/.test(a));
}

/** An inventory path (`DC0/vm/templates/debian-12`) to its object, or undefined. */
export async function findByInventoryPath(
  client: VsphereClient,
  path: string,
  ctx: CallContext,
): Promise<MoRef | undefined> {
  const { searchIndex } = await client.serviceContent(ctx);
  return morefOf(await client.call('FindByInventoryPath', searchIndex, { inventoryPath: path }, ctx));
}

/** Names of the datacenters under the root folder. */
export async function datacenterNames(client: VsphereClient, ctx: CallContext): Promise<string[]> {
  const { rootFolder } = await client.serviceContent(ctx);
  const props = await objectProperties(client, rootFolder, ['childEntity'], ctx);
  const children = list(child(props?.get('childEntity'), 'ManagedObjectReference'))
    .map(morefOf)
    .filter((r): r is MoRef => r?.type === 'Datacenter');
  const names: string[] = [];
  for (const dc of children) {
    const name = text((await objectProperties(client, dc, ['name'], ctx))?.get('name'));
    if (name) names.push(name);
  }
  return names;
}
