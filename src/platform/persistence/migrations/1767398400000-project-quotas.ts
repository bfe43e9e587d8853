import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Project quotas: the `project_quotas` read model (limits and usage per project, folded from the
 * `quota-<project_id>` streams) and `quota_vm_projects`, the quota-release process manager's record of
 * each VM's project and whether the VM has ended (VmDeleted does not name the project).
 */
export class ProjectQuotas1767398400000 implements MigrationInterface {
  name = 'ProjectQuotas1767398400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE project_quotas (
        project_id text PRIMARY KEY,
        -- null: ops never set limits, the project is unlimited
        limits jsonb,
        usage jsonb NOT NULL,
        state jsonb NOT NULL,
        position bigint NOT NULL
      )`);
    await q.query(`
      CREATE TABLE quota_vm_projects (
        vm_id text PRIMARY KEY,
        project_id text NOT NULL,
        ended_at timestamptz
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS quota_vm_projects`);
    await q.query(`DROP TABLE IF EXISTS project_quotas`);
    // The projections' positions go with their rows, so a later up() rebuilds them from the start.
    await q.query(`DELETE FROM projection_checkpoints WHERE name IN ('quota-read-model', 'quota-release')`);
  }
}
