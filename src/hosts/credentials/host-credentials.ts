import { Inject, Injectable } from '@nestjs/common';
import type { HostPrincipal } from '@hcp/host-protocol';
import type { HcpConfig } from '../../config/hcp-config';
import { HCP_CONFIG } from '../../platform/tokens';
import { HostStore } from '../host.store';
import { secretDigest } from './host-secrets';
import { parseStaticHostCredentials, StaticHostCredential } from './static-host-credentials';

export type CredentialCheck = { ok: true; principal: HostPrincipal } | { ok: false; reason: 'unknown' | 'revoked' };

/**
 * Checks a host credential by its digest against `hosts`, on every request: no credential is held in
 * memory, so a restart changes nothing and a revocation or rotation applies to the very next request in
 * every process. Configured (static) credentials are looked up the same way once their host's row exists;
 * the first request with one makes the row.
 */
@Injectable()
export class HostCredentials {
  private readonly configured: ReadonlyMap<string, StaticHostCredential>;

  constructor(
    private readonly store: HostStore,
    @Inject(HCP_CONFIG) config: HcpConfig,
  ) {
    this.configured = new Map(parseStaticHostCredentials(config.hosts.staticCredentials).map((c) => [c.digest, c]));
  }

  async check(credential: string): Promise<CredentialCheck> {
    const digest = secretDigest(credential);
    let found = await this.store.principalOf(digest);
    const configured = this.configured.get(digest);
    if (!found && configured) {
      await this.store.ensureStatic(configured.cluster_id, configured.identity, digest);
      found = await this.store.principalOf(digest);
    }
    if (!found) return { ok: false, reason: 'unknown' };
    if (found.state !== 'active') return { ok: false, reason: 'revoked' };
    return { ok: true, principal: { host_id: found.host_id, cluster_id: found.cluster_id, identity: found.identity } };
  }
}
