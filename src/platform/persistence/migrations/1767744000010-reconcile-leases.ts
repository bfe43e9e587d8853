import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One row per cluster the reconcile loop works on: which HCP process holds it and until when, so two
 * processes never reconcile one cluster at once and a dead holder's cluster is taken over once its lease
 * has expired.
 */
export class ReconcileLeases1767744000010 implements MigrationInterface {
  name = 'ReconcileLeases1767744000010';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE reconcile_leases (
        cluster_key text PRIMARY KEY,
        holder text NOT NULL,
        acquired_at timestamptz NOT NULL,
        renewed_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS reconcile_leases`);
  }
}
