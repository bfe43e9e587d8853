import { Inject, Injectable } from '@nestjs/common';
import { conflict, hostEvent, HostCredentialRotated, HostRevoked, notFound } from '@hcp/domain';
import type { HcpConfig } from '../../config/hcp-config';
import { HCP_CONFIG } from '../../platform/tokens';
import { newHostCredential, secretDigest } from '../credentials/host-secrets';
import { HostEventsRecorder } from '../host-events.recorder';
import { HostStore, STATIC_ENROLLMENT } from '../host.store';
import { HostView, presentHost } from './host.presenter';

/** What ops do with enrolled hosts: read them, revoke them, give them a new credential. */
@Injectable()
export class HostAdmin {
  constructor(
    private readonly hosts: HostStore,
    private readonly events: HostEventsRecorder,
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
  ) {}

  async list(clusterId?: string): Promise<{ items: HostView[]; next_cursor: null }> {
    const now = new Date();
    const rows = await this.hosts.list(clusterId);
    return { items: rows.map((h) => presentHost(h, this.config.hosts.heartbeatTimeoutMs, now)), next_cursor: null };
  }

  async get(id: string): Promise<HostView> {
    const host = await this.hosts.find(id);
    if (!host) throw notFound('host');
    return presentHost(host, this.config.hosts.heartbeatTimeoutMs);
  }

  /** Revoked at once; revoking a revoked host changes nothing and answers the same. */
  async revoke(id: string, actor: string, traceId: string): Promise<HostView> {
    const host = await this.hosts.find(id);
    if (!host) throw notFound('host');
    if (await this.hosts.revoke(id))
      await this.events.record(
        hostEvent<HostRevoked>('HostRevoked', { host_id: id, cluster_id: host.cluster_id }),
        actor,
        traceId,
      );
    return this.get(id);
  }

  async rotate(id: string, actor: string, traceId: string): Promise<{ credential: string }> {
    const host = await this.hosts.find(id);
    if (!host) throw notFound('host');
    if (host.enrolled_with === STATIC_ENROLLMENT)
      throw conflict('this host has a configured credential (HCP_STATIC_HOST_CREDENTIALS): change it there');
    if (host.state !== 'active') throw conflict('the host is revoked; enroll it again with a new token');
    const credential = newHostCredential();
    if (!(await this.hosts.rotate(id, secretDigest(credential))))
      throw conflict('the host changed meanwhile (revoked); nothing was rotated');
    await this.events.record(
      hostEvent<HostCredentialRotated>('HostCredentialRotated', { host_id: id, cluster_id: host.cluster_id }),
      actor,
      traceId,
    );
    return { credential };
  }
}
