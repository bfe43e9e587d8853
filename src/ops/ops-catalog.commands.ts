import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import {
  checkOpsSpec,
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
  ProviderSpec,
  ZoneSpec,
} from '@hcp/domain';
import { DriverFactory } from './drivers/driver-factory';
import { OpsCatalogQueries } from './ops-catalog.queries';
import { OpsResourceRepository } from './ops-resource.repository';
import { ProviderCredentialsStore } from './drivers/provider-credentials.store';

/** A create checks its name against every resource; an update against every other one. */
type Change = 'create' | 'update';

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
    const { credentials, ...rest } = input;
    const spec: ProviderSpec = { ...rest, has_credentials: Boolean(credentials) };
    await this.checkProvider(id, spec, credentials ?? null, 'create');
    if (credentials) await this.credentials.put(id, credentials);
    return this.repo.execute(
      'provider',
      id,
      () => ({ type: 'register', id, spec: checkOpsSpec('provider', spec) }),
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
    const merge = (spec: ProviderSpec): ProviderSpec => ({
      ...spec,
      ...rest,
      has_credentials: spec.has_credentials || Boolean(credentials),
    });
    // The driver reads the new settings with the credentials they will be used with.
    await this.checkProvider(id, merge(current.spec), credentials ?? (await this.credentials.get(id)), 'update');
    if (credentials) await this.credentials.put(id, credentials);
    return this.repo.execute(
      'provider',
      id,
      (now) => ({ type: 'update', spec: checkOpsSpec('provider', merge(now!.spec)) }),
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
    await this.checkCluster(id, spec, 'create');
    return this.repo.execute('cluster', id, () => ({ type: 'register', id, spec: checkOpsSpec('cluster', spec) }), ctx);
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
    await this.checkCluster(id, { ...current.spec, ...patch }, 'update');
    return this.repo.execute(
      'cluster',
      id,
      (now) => ({ type: 'update', spec: checkOpsSpec('cluster', { ...now!.spec, ...patch }) }),
      ctx,
    );
  }

  async deleteCluster(id: string, ctx: EventContext): Promise<void> {
    const zones = await this.queries.referencing('zone', { cluster_ids: [id] });
    if (zones.length) throw conflict('the cluster is still in zones; remove it from them first', { zones });
    await this.repo.execute('cluster', id, () => ({ type: 'delete' }), ctx);
  }

  // --- zones ---------------------------------------------------------------------------------------
  async createZone(id: string, spec: ZoneSpec, ctx: EventContext): Promise<OpsResourceState<'zone'>> {
    await this.checkZone(id, spec, 'create');
    return this.repo.execute('zone', id, () => ({ type: 'register', id, spec: checkOpsSpec('zone', spec) }), ctx);
  }

  /** A zone is replaced whole (PUT): the new spec is checked exactly as a create's. */
  async replaceZone(id: string, spec: ZoneSpec, ctx: EventContext): Promise<OpsResourceState<'zone'>> {
    await this.live('zone', id);
    await this.checkZone(id, spec, 'update');
    return this.repo.execute('zone', id, () => ({ type: 'update', spec: checkOpsSpec('zone', spec) }), ctx);
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
    await this.checkImage(id, spec, 'create');
    return this.repo.execute('image', id, () => ({ type: 'register', id, spec: checkOpsSpec('image', spec) }), ctx);
  }

  async updateImage(id: string, given: Partial<ImageSpec>, ctx: EventContext): Promise<OpsResourceState<'image'>> {
    const patch = definedOnly(given);
    const current = await this.live('image', id);
    await this.checkImage(id, { ...current.spec, ...patch }, 'update');
    return this.repo.execute(
      'image',
      id,
      (now) => ({ type: 'update', spec: checkOpsSpec('image', { ...now!.spec, ...patch }) }),
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
    await this.checkFlavor(id, spec, 'create');
    return this.repo.execute('flavor', id, () => ({ type: 'register', id, spec: checkOpsSpec('flavor', spec) }), ctx);
  }

  async updateFlavor(id: string, given: Partial<FlavorSpec>, ctx: EventContext): Promise<OpsResourceState<'flavor'>> {
    const patch = definedOnly(given);
    const current = await this.live('flavor', id);
    await this.checkFlavor(id, { ...current.spec, ...patch }, 'update');
    return this.repo.execute(
      'flavor',
      id,
      (now) => ({ type: 'update', spec: checkOpsSpec('flavor', { ...now!.spec, ...patch }) }),
      ctx,
    );
  }

  async deleteFlavor(id: string, ctx: EventContext): Promise<void> {
    await this.repo.execute('flavor', id, () => ({ type: 'delete' }), ctx);
  }

  // --- one validation per kind, run on what a create or an update would store -----------------------
  /**
   * A provider as a create would accept it: a type with a driver, the whole-spec checks (https endpoint
   * without credentials), a free name, and the driver's own reading of endpoint, TLS, settings and
   * credentials (no I/O).
   */
  private async checkProvider(
    id: string,
    spec: ProviderSpec,
    credentials: Record<string, unknown> | null,
    change: Change,
  ): Promise<void> {
    if (!this.drivers.supports(spec.type)) {
      throw new HcpError('FEATURE_NOT_SUPPORTED', `no driver for provider type ${spec.type} in this release`, {
        capability: `provider:${spec.type}`,
      });
    }
    checkOpsSpec('provider', spec);
    await this.assertNameFree('provider', spec.name, change === 'update' ? id : undefined);
    await this.drivers.validate({
      providerId: id,
      provider: spec,
      credentials,
      clusterId: `${id}:validate`,
      cluster: null,
    });
  }

  /** A cluster as a create would accept it: a live provider, a free name, placement hints its driver reads. */
  private async checkCluster(id: string, spec: ClusterSpec, change: Change): Promise<void> {
    checkOpsSpec('cluster', spec);
    const provider = await this.repo.live('provider', spec.provider_id);
    if (!provider) throw invalidField('provider_id', `unknown provider ${JSON.stringify(spec.provider_id)}`);
    await this.assertNameFree('cluster', spec.name, change === 'update' ? id : undefined);
    await this.drivers.validate({
      providerId: spec.provider_id,
      provider: provider.spec,
      credentials: provider.spec.has_credentials ? await this.credentials.get(spec.provider_id) : null,
      clusterId: id,
      cluster: spec,
    });
  }

  private async checkZone(id: string, spec: ZoneSpec, change: Change): Promise<void> {
    checkOpsSpec('zone', spec);
    await this.assertClusters(spec.cluster_ids);
    await this.assertNameFree('zone', spec.name, change === 'update' ? id : undefined);
  }

  private async checkImage(id: string, spec: ImageSpec, change: Change): Promise<void> {
    checkOpsSpec('image', spec);
    await this.assertNameFree('image', spec.name, change === 'update' ? id : undefined);
    await this.assertClusters(Object.keys(spec.provider_refs), 'provider_refs');
  }

  private async checkFlavor(id: string, spec: FlavorSpec, change: Change): Promise<void> {
    checkOpsSpec('flavor', spec);
    await this.assertNameFree('flavor', spec.name, change === 'update' ? id : undefined);
  }

  // --- checks --------------------------------------------------------------------------------------
  private async assertNameFree(kind: OpsKind, name: string, exceptId?: string): Promise<void> {
    if (await this.queries.nameTaken(kind, name, exceptId))
      throw conflict(`a ${kind} named ${JSON.stringify(name)} exists already`, { field: 'name' });
  }

  /** References are checked on the streams, so a resource registered a moment ago is found. */
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
