import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { toHcpError } from '@hcp/domain';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { DriverRegistry } from './driver-registry';
import { OpsCatalogQueries } from '../ops-catalog.queries';

export interface ProviderHealth {
  status: 'healthy' | 'unreachable' | 'unknown';
  message: string | null;
  checked_at: string | null;
}

const CHECK_TIMEOUT_MS = 10_000;

/**
 * Provider connectivity: checked on registration, on demand, and periodically by the worker role. The
 * result is observed state (kept in a table), not an event: it changes with the network, not by decision.
 */
@Injectable()
export class ProviderHealthService {
  private readonly logger = new Logger('provider-health');

  constructor(
    private readonly db: DataSource,
    private readonly catalog: OpsCatalogQueries,
    private readonly drivers: DriverRegistry,
    private readonly metrics: HcpMetrics,
  ) {}

  async check(providerId: string): Promise<ProviderHealth> {
    // Any cluster's driver reaches the same endpoint; a provider without clusters is probed with none.
    const [cluster] = await this.catalog.list('cluster', { specContains: { provider_id: providerId } });
    let health: ProviderHealth;
    try {
      const driver = await this.drivers.driverFor(providerId, cluster?.id ?? `${providerId}:probe`);
      await driver.checkConnectivity({
        deadline: new Date(Date.now() + CHECK_TIMEOUT_MS),
        signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
      });
      health = { status: 'healthy', message: null, checked_at: new Date().toISOString() };
    } catch (err) {
      // The taxonomy message only: provider answers may echo request details, never credentials here.
      health = { status: 'unreachable', message: toHcpError(err).message, checked_at: new Date().toISOString() };
    }
    await this.db.query(
      `INSERT INTO provider_health (provider_id, status, message, checked_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (provider_id) DO UPDATE SET status = EXCLUDED.status, message = EXCLUDED.message, checked_at = EXCLUDED.checked_at`,
      [providerId, health.status, health.message, health.checked_at],
    );
    if (health.status !== 'healthy')
      this.logger.warn({ msg: 'provider unreachable', provider_id: providerId, reason: health.message });
    return health;
  }

  async of(providerIds: string[]): Promise<Map<string, ProviderHealth>> {
    if (providerIds.length === 0) return new Map();
    const rows = await this.db.query(
      `SELECT provider_id, status, message, checked_at FROM provider_health WHERE provider_id = ANY($1)`,
      [providerIds],
    );
    return new Map(
      rows.map(
        (r: { provider_id: string; status: ProviderHealth['status']; message: string | null; checked_at: Date }) => [
          r.provider_id,
          { status: r.status, message: r.message, checked_at: r.checked_at.toISOString() },
        ],
      ),
    );
  }

  async checkAll(): Promise<void> {
    const providers = await this.catalog.list('provider');
    // The gauge comes from these periodic passes only (not from checks ops ask an API process for), so the
    // processes reporting it are the ones that also drop a provider that was removed.
    const current = new Set(providers.map((p) => p.id));
    for (const { labels } of (await this.metrics.providerUp.get()).values)
      if (typeof labels.provider === 'string' && !current.has(labels.provider))
        this.metrics.providerUp.remove({ provider: labels.provider });
    for (const provider of providers) {
      try {
        const health = await this.check(provider.id);
        this.metrics.providerUp.set({ provider: provider.id }, health.status === 'healthy' ? 1 : 0);
      } catch (err) {
        this.logger.warn(`health check of ${provider.id} failed: ${(err as Error).message}`);
      }
    }
  }
}
