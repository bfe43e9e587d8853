import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import {
  ClusterSpec,
  conflict,
  EventContext,
  FlavorSpec,
  HcpError,
  ImageSpec,
  invalidField,
  notFound,
  OpsKind,
  OpsResourceState,
  OpsSpecs,
  ProviderSpec,
  ZoneSpec,
} from '@hcp/domain';
import { DriverFactory } from './drivers/driver-factory';
import { OpsCatalogQueries } from './ops-catalog.queries';
import { OpsResourceRepository } from './ops-resource.repository';
import { ProviderCredentialsStore } from './drivers/provider-credentials.store';

export type ProviderInput = Omit<ProviderSpec, 'has_credentials'> & { credentials?: Record<string, unknown> };

/**
 * Ops changes to providers, clusters, zones, images and flavors: each is an event on the resource's
 * stream (audited, replayable), after the checks that keep references whole (a cluster's provider
 * exists, a zone's clusters exist, nothing in use is deleted). References are checked against the ops
 * read model: reference data that ops change rarely, where a lag of milliseconds is harmless.
 */
@Injectable()
export class OpsCatalogCommands {
  constructor(
    private readonly repo: OpsResourceRepository,
    private readonly queries: OpsCatalogQueries,
    private readonly credentials: ProviderCredentialsStore,
    private readonly drivers: DriverFactory,
    private readonly db: DataSource,
  ) {}

  // --- providers -----------------------------------------------------------------------------------
  async registerProvider(
    input: ProviderInput,
    ctx: EventContext,
    id: string = randomUUID(),
  ): Promise<OpsResourceState<'provider'>> {
    if (!this.drivers.supports(input.type)) {
      throw new HcpError('FEATURE_NOT_SUPPORTED', `no driver for provider type ${input.type} in this release`, {
        capability: `provider:${input.type}`,
      });
    }
    await this.assertNameFree('provider', input.name);
    const { credentials, ...rest } = input;
    await this.drivers.validate({
      providerId: id,
      provider: { ...rest, has_credentials: Boolean(credentials) },
      credentials: credentials ?? null,
      clusterId: `${id}:validate`,
      cluster: null,
    });
    if (credentials) await this.credentials.put(id, credentials);
    return this.repo.execute(
      'provider',
      id,
      () => ({ type: 'register', id, spec: { ...rest, has_credentials: Boolean(credentials) } }),
      ctx,
    );
  }

  async updateProvider(
    id: string,
    patch: Partial<ProviderInput>,
    ctx: EventContext,
  ): Promise<OpsResourceState<'provider'>> {
    const { credentials, ...rest } = definedOnly(patch);
    const current = await this.live('provider', id);
    if (rest.type && rest.type !== current.spec.type)
      throw invalidField('type', 'the type of a provider cannot change');
    if (rest.name) await this.assertNameFree('provider', rest.name, id);
    if (credentials) await this.credentials.put(id, credentials);
    return this.repo.execute(
      'provider',
      id,
      (now) => ({
        type: 'update',
        spec: { ...now!.spec, ...rest, has_credentials: now!.spec.has_credentials || Boolean(credentials) },
      }),
      ctx,
    );
  }

  async deleteProvider(id: string, ctx: EventContext): Promise<void> {
    const clusters = await this.queries.referencing('cluster', { provider_id: id });
    if (clusters.length) throw conflict('the provider still has clusters; delete them first', { clusters });
    await this.repo.execute('provider', id, () => ({ type: 'delete' }), ctx);
    await this.credentials.remove(id);
  }

  // --- clusters ------------------------------------------------------------------------------------
  async registerCluster(
    spec: ClusterSpec,
    ctx: EventContext,
    id: string = randomUUID(),
  ): Promise<OpsResourceState<'cluster'>> {
    await this.assertExists('provider', spec.provider_id, 'provider_id');
    await this.assertNameFree('cluster', spec.name);
    return this.repo.execute('cluster', id, () => ({ type: 'register', id, spec }), ctx);
  }

  async updateCluster(
    id: string,
    given: Partial<ClusterSpec>,
    ctx: EventContext,
  ): Promise<OpsResourceState<'cluster'>> {
    const patch = definedOnly(given);
    const current = await this.live('cluster', id);
    if (patch.provider_id && patch.provider_id !== current.spec.provider_id)
      throw invalidField('provider_id', 'a cluster cannot move to another provider');
    if (patch.name) await this.assertNameFree('cluster', patch.name, id);
    return this.repo.execute('cluster', id, (now) => ({ type: 'update', spec: { ...now!.spec, ...patch } }), ctx);
  }

  async deleteCluster(id: string, ctx: EventContext): Promise<void> {
    const zones = await this.queries.referencing('zone', { cluster_ids: [id] });
    if (zones.length) throw conflict('the cluster is still in zones; remove it from them first', { zones });
    await this.repo.execute('cluster', id, () => ({ type: 'delete' }), ctx);
  }

  // --- zones ---------------------------------------------------------------------------------------
  async createZone(id: string, spec: ZoneSpec, ctx: EventContext): Promise<OpsResourceState<'zone'>> {
    await this.assertClusters(spec.cluster_ids);
    await this.assertNameFree('zone', spec.name);
    return this.repo.execute('zone', id, () => ({ type: 'register', id, spec }), ctx);
  }

  async replaceZone(id: string, spec: ZoneSpec, ctx: EventContext): Promise<OpsResourceState<'zone'>> {
    await this.live('zone', id);
    await this.assertClusters(spec.cluster_ids);
    await this.assertNameFree('zone', spec.name, id);
    return this.repo.execute('zone', id, () => ({ type: 'update', spec }), ctx);
  }

  async deleteZone(id: string, ctx: EventContext): Promise<void> {
    await this.assertUnused(`zone = $1`, id, 'zone');
    await this.repo.execute('zone', id, () => ({ type: 'delete' }), ctx);
  }

  // --- images and flavors --------------------------------------------------------------------------
  async registerImage(
    spec: ImageSpec,
    ctx: EventContext,
    id: string = randomUUID(),
  ): Promise<OpsResourceState<'image'>> {
    await this.assertNameFree('image', spec.name);
    await this.assertClusters(Object.keys(spec.provider_refs), 'provider_refs');
    return this.repo.execute('image', id, () => ({ type: 'register', id, spec }), ctx);
  }

  async updateImage(id: string, given: Partial<ImageSpec>, ctx: EventContext): Promise<OpsResourceState<'image'>> {
    const patch = definedOnly(given);
    if (patch.name) await this.assertNameFree('image', patch.name, id);
    if (patch.provider_refs) await this.assertClusters(Object.keys(patch.provider_refs), 'provider_refs');
    return this.repo.execute(
      'image',
      id,
      (now) => ({ type: 'update', spec: { ...now?.spec, ...patch } as ImageSpec }),
      ctx,
    );
  }

  async deleteImage(id: string, ctx: EventContext): Promise<void> {
    await this.assertUnused(`image_id = $1`, id, 'image');
    await this.repo.execute('image', id, () => ({ type: 'delete' }), ctx);
  }

  async registerFlavor(
    spec: FlavorSpec,
    ctx: EventContext,
    id: string = randomUUID(),
  ): Promise<OpsResourceState<'flavor'>> {
    await this.assertNameFree('flavor', spec.name);
    return this.repo.execute('flavor', id, () => ({ type: 'register', id, spec }), ctx);
  }

  async updateFlavor(id: string, given: Partial<FlavorSpec>, ctx: EventContext): Promise<OpsResourceState<'flavor'>> {
    const patch = definedOnly(given);
    if (patch.name) await this.assertNameFree('flavor', patch.name, id);
    return this.repo.execute(
      'flavor',
      id,
      (now) => ({ type: 'update', spec: { ...now?.spec, ...patch } as FlavorSpec }),
      ctx,
    );
  }

  async deleteFlavor(id: string, ctx: EventContext): Promise<void> {
    await this.repo.execute('flavor', id, () => ({ type: 'delete' }), ctx);
  }

  // --- checks --------------------------------------------------------------------------------------
  private async assertNameFree(kind: OpsKind, name: string, exceptId?: string): Promise<void> {
    if (await this.queries.nameTaken(kind, name, exceptId))
      throw conflict(`a ${kind} named ${JSON.stringify(name)} exists already`, { field: 'name' });
  }

  /** References are checked on the streams, so a resource registered a moment ago is found. */
  private async assertExists(kind: keyof OpsSpecs, id: string, field: string): Promise<void> {
    if (!(await this.repo.live(kind, id))) throw invalidField(field, `unknown ${kind} ${JSON.stringify(id)}`);
  }

  private async assertClusters(ids: string[], field = 'cluster_ids'): Promise<void> {
    const found = await Promise.all(ids.map((id) => this.repo.live('cluster', id)));
    const missing = ids.filter((_, i) => !found[i]);
    if (missing.length) throw invalidField(field, `unknown clusters: ${missing.join(', ')}`);
  }

  private async live<K extends OpsKind>(kind: K, id: string): Promise<OpsResourceState<K>> {
    const state = await this.repo.live(kind, id);
    if (!state) throw notFound(kind);
    return state;
  }

  /** Refuses to delete what live VMs use (checked on the VM read model). */
  private async assertUnused(condition: string, id: string, what: string): Promise<void> {
    const [{ n }] = await this.db.query(
      `SELECT count(*)::int AS n FROM vm_read_model WHERE ${condition} AND status <> 'deleted'`,
      [id],
    );
    if (n > 0) throw conflict(`the ${what} is in use by ${n} VM(s)`, { vms: n });
  }
}

/** A patch keeps what it does not mention: absent and undefined fields never overwrite the spec. */
function definedOnly<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;
}
