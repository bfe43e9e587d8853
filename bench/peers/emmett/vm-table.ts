/** The peer's projected VM table, shared by the peer and the harness's seeding (no Emmett import here). */
export const VM_TABLE = 'emmett_vms';

export const CREATE_VM_TABLE = `CREATE TABLE IF NOT EXISTS ${VM_TABLE} (
  id uuid PRIMARY KEY, project_id text NOT NULL, document jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`;
