import { DataSource } from 'typeorm';

/**
 * Who reconciles which cluster: one row per cluster in `reconcile_leases`. A process takes a cluster
 * whose lease is free or expired, renews it on each of its passes and gives it back on shutdown; one
 * that died leaves its lease to expire, then another process takes the cluster over. Each step is one
 * statement, so two processes racing for a cluster cannot both win.
 */
export class ReconcileLeases {
  constructor(private readonly db: Pick<DataSource, 'query'>) {}

  /** Takes or renews the lease of `clusterKey` for `holder` until now + ttlMs; false while another holds it. */
  async acquire(clusterKey: string, holder: string, ttlMs: number): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `INSERT INTO reconcile_leases (cluster_key, holder, acquired_at, renewed_at, expires_at)
       VALUES ($1, $2, now(), now(), now() + make_interval(secs => $3::double precision / 1000))
       ON CONFLICT (cluster_key) DO UPDATE
          SET holder = EXCLUDED.holder,
              acquired_at = CASE WHEN reconcile_leases.holder = EXCLUDED.holder
                                 THEN reconcile_leases.acquired_at ELSE now() END,
              renewed_at = now(),
              expires_at = EXCLUDED.expires_at
        WHERE reconcile_leases.holder = EXCLUDED.holder OR reconcile_leases.expires_at <= now()
      RETURNING cluster_key`,
      [clusterKey, holder, ttlMs],
    );
    return rows.length === 1;
  }

  /** Gives the lease back (shutdown), so another process need not wait for it to expire. */
  async release(clusterKey: string, holder: string): Promise<void> {
    await this.db.query(`DELETE FROM reconcile_leases WHERE cluster_key = $1 AND holder = $2`, [clusterKey, holder]);
  }

  /** The current holder of a cluster's unexpired lease, or null. */
  async holderOf(clusterKey: string): Promise<string | null> {
    const rows: Array<{ holder: string }> = await this.db.query(
      `SELECT holder FROM reconcile_leases WHERE cluster_key = $1 AND expires_at > now()`,
      [clusterKey],
    );
    return rows[0]?.holder ?? null;
  }
}

export const clusterKey = (providerId: string, clusterId: string) => `${providerId}/${clusterId}`;
