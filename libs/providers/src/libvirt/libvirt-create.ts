/**
 * Making a VM: a qcow2 overlay on the base image in the pool, then the domain on it. Each step first
 * looks for what an earlier attempt made, so a repeated create completes a half-made VM (volume but no
 * domain) instead of failing or making a second one.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { invalidField, invalidRequest } from '@hcp/domain';
import type { CallContext, CreateVmSpec } from '../spi/provider-driver';
import { domainXml, metadataOfSpec, type ParsedDomain } from './domain-xml';
import { domainName, isHcpId, readDomain, volumeName, type LibvirtHost } from './libvirt-domain';
import { isAlreadyExisting, isVolumeMissing } from './libvirt-errors';
import { virsh } from './virsh';

/** A base image is a volume of the pool named by image_ref; anything path-like is refused. */
const VOLUME_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,254}$/;
const GIB = 1024 ** 3;

export function checkSpec(spec: CreateVmSpec): void {
  if (!isHcpId(spec.hcp_id)) throw invalidField('hcp_id', 'is not a valid VM id');
  if (!VOLUME_NAME.test(spec.image_ref)) throw invalidField('image', 'is not an image this host has');
  if (!Number.isInteger(spec.vcpus) || spec.vcpus < 1) throw invalidField('vcpus', 'must be a positive integer');
  if (!Number.isInteger(spec.ram_mb) || spec.ram_mb < 16) throw invalidField('ram_mb', 'must be at least 16');
  if (!Number.isInteger(spec.disk_gb) || spec.disk_gb < 1) throw invalidField('disk_gb', 'must be a positive integer');
}

/** A random VNC password (VNC authentication uses at most 8 characters). */
export function randomVncPassword(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
  return [...randomBytes(8)].map((b) => alphabet[b % alphabet.length]).join('');
}

interface VolumeInfo {
  format: string;
  capacity: number;
}

async function volumeInfo(host: LibvirtHost, name: string, ctx: CallContext): Promise<VolumeInfo | null> {
  try {
    const xml = await virsh(host.virsh, ['vol-dumpxml', '--pool', host.pool, name], ctx);
    return {
      format: /<format type=['"]([^'"]+)['"]/.exec(xml)?.[1] ?? 'raw',
      capacity: Number(/<capacity[^>]*>(\d+)<\/capacity>/.exec(xml)?.[1] ?? 0),
    };
  } catch (err) {
    if (isVolumeMissing(err)) return null;
    throw err;
  }
}

async function ensureOverlay(host: LibvirtHost, spec: CreateVmSpec, ctx: CallContext): Promise<boolean> {
  const volume = volumeName(spec.hcp_id);
  if (await volumeInfo(host, volume, ctx)) return false;
  const base = await volumeInfo(host, spec.image_ref, ctx);
  if (!base)
    throw invalidRequest('the image is not available on this host', {
      fields: [{ field: 'image', problems: ['not found on the host'] }],
    });
  if (base.capacity > spec.disk_gb * GIB) throw invalidField('disk_gb', 'is smaller than the image');
  await virsh(
    host.virsh,
    [
      'vol-create-as',
      host.pool,
      volume,
      `${spec.disk_gb}G`,
      '--format',
      'qcow2',
      '--backing-vol',
      spec.image_ref,
      '--backing-vol-format',
      base.format,
    ],
    ctx,
  );
  return true;
}

export async function deleteVolume(host: LibvirtHost, hcpId: string, ctx: CallContext): Promise<void> {
  try {
    await virsh(host.virsh, ['vol-delete', '--pool', host.pool, volumeName(hcpId)], ctx);
  } catch (err) {
    if (!isVolumeMissing(err)) throw err;
  }
}

/** virsh reads the XML from a file (Node's stdin pipe is a socket, which /dev/stdin cannot open). */
async function defineFromFile(host: LibvirtHost, xml: string, ctx: CallContext): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'hcp-libvirt-'));
  try {
    const file = join(dir, 'domain.xml');
    await writeFile(file, xml, { mode: 0o600 });
    await virsh(host.virsh, ['define', file], ctx);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Defines the VM's domain (and its disk) unless it exists; returns the domain either way. */
export async function ensureDomain(host: LibvirtHost, spec: CreateVmSpec, ctx: CallContext): Promise<ParsedDomain> {
  const existing = await readDomain(host, spec.hcp_id, ctx);
  if (existing) return existing;
  const madeVolume = await ensureOverlay(host, spec, ctx);
  const name = domainName(spec.hcp_id);
  const xml = domainXml({
    name,
    metadata: metadataOfSpec(spec),
    vcpus: spec.vcpus,
    ram_mb: spec.ram_mb,
    pool: host.pool,
    volume: volumeName(spec.hcp_id),
    network: host.network,
    vnc_listen: host.vnc_listen,
    vnc_password: randomVncPassword(),
  });
  try {
    await defineFromFile(host, xml, ctx);
  } catch (err) {
    if (isAlreadyExisting(err)) {
      const raced = await readDomain(host, spec.hcp_id, ctx);
      if (raced) return raced;
    }
    // A domain that could not be defined leaves no disk behind (best effort: the error is the define's).
    if (madeVolume) await deleteVolume(host, spec.hcp_id, ctx).catch(() => undefined);
    throw err;
  }
  const defined = await readDomain(host, spec.hcp_id, ctx);
  if (!defined) throw invalidRequest('the host did not keep the VM definition');
  return defined;
}
