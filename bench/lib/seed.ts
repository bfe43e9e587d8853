import type { Client } from 'pg';
// A relative import, so the compiled copy (bench/.build) uses the compiled projection code.
import { VM_VIEW_FIELDS } from '../../projections/vm-read-model/vm-view';

/*
 * Seeding straight into PostgreSQL: creating 100,000 VMs through the API would take longer than the
 * benchmark. Ids are md5('bench-vm-<i>') read as a UUID (version and variant bits set), so the load generator can address VM i without
 * a list (see bench/load/cannon.js). Rows and events have the exact shapes HCP writes: the read model's
 * `state` is a full VmState (libs/domain/src/vm/vm.state-machine.ts), its columns are what
 * projections/vm-read-model/vm-read-model.projection.ts toRow derives from it (`view` built here by
 * PostgreSQL from `state`, the same fields in the same order).
 */

const VIEW_OF_STATE = `json_build_object(${VM_VIEW_FIELDS.map((f) => `'${f}', st.state->'${f}'`).join(', ')})::text`;

export interface CatalogRefs {
  imageId: string;
  flavorId: string;
  providerId: string;
  clusterId: string;
}

/** Placeholder references for the rebuild database (the projection does not look them up). */
export const FAKE_CATALOG: CatalogRefs = {
  imageId: '00000000-0000-4000-8000-000000000001',
  flavorId: '00000000-0000-4000-8000-000000000002',
  providerId: '00000000-0000-4000-8000-000000000003',
  clusterId: '00000000-0000-4000-8000-000000000004',
};

/** md5 of a text as a UUID with version 4 and RFC variant bits, so HCP's UUID checks accept it. */
const uuidOf = (text: string) => `overlay(overlay(md5(${text}) placing '4' from 13) placing '8' from 17)::uuid`;

const iso = (ts: string) => `to_char((${ts}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * VMs first..last (inclusive) of one project into vm_read_model, newest last. 1 in 100 is deleted
 * (lists skip those), 15 in 100 stopped, 4 in 100 in error, the rest running with an address.
 */
export async function seedVmReadModel(
  client: Client,
  project: string,
  first: number,
  last: number,
  refs: CatalogRefs,
  { chunk = 25_000, settled = true }: { chunk?: number; settled?: boolean } = {},
): Promise<void> {
  for (let from = first; from <= last; from += chunk) {
    const to = Math.min(last, from + chunk - 1);
    await client.query(
      `WITH base AS (
         SELECT i,
                ${uuidOf("'bench-vm-' || i")} AS id,
                ${uuidOf("'bench-job-' || i")} AS job,
                'vm-' || i AS name,
                now() - make_interval(secs => ($3::int - i)) AS created,
                CASE WHEN i % 100 = 0 THEN 'deleted' WHEN i % 100 < 16 THEN 'stopped' WHEN i % 100 < 20 THEN 'error' ELSE 'running' END AS status
         FROM generate_series($1::int, $2::int) AS i
       ), shaped AS (
         SELECT b.*,
                CASE b.status WHEN 'deleted' THEN 'deleted' WHEN 'stopped' THEN 'stopped' ELSE 'running' END AS desired,
                CASE WHEN b.status = 'running'
                     THEN jsonb_build_array(jsonb_build_object('type', 'ipv4', 'address', '10.' || (b.i / 65536 % 256) || '.' || (b.i / 256 % 256) || '.' || (b.i % 254 + 1), 'nic', 'net0'))
                     ELSE '[]'::jsonb END AS addresses,
                jsonb_build_object('env', CASE WHEN b.i % 3 = 0 THEN 'prod' ELSE 'dev' END, 'team', 'team-' || (b.i % 20)) AS tags,
                CASE WHEN b.status = 'error'
                     THEN jsonb_build_object('code', 'PROVIDER_ERROR', 'message', 'the provider failed', 'retryable', false)
                     ELSE NULL END AS last_error
         FROM base b
       ), stated AS (
         SELECT s.*,
                jsonb_build_object(
                  'id', s.id, 'project_id', $4::text, 'name', s.name, 'zone', 'local', 'image_id', $5::text, 'flavor_id', $6::text,
                  'resources', jsonb_build_object('vcpus', 1, 'ram_mb', 1024, 'disk_gb', 10),
                  'placement', jsonb_build_object('provider_id', $7::text, 'cluster_id', $8::text, 'image_ref', 'template/debian-12'),
                  'status', s.status, 'desired_state', s.desired, 'addresses', s.addresses, 'tags', s.tags, 'metadata', '{}'::jsonb,
                  'pending_job_id', NULL, 'last_job_id', s.job, 'last_error', s.last_error,
                  'created_at', ${iso('s.created')}, 'updated_at', ${iso('s.created')}) AS state
         FROM shaped s
       )
       INSERT INTO vm_read_model (id, project_id, name, zone, image_id, flavor_id, status, desired_state, addresses, tags, metadata,
                                  last_job_id, created_at, updated_at, state, view, position)
       SELECT st.id, $4, st.name, 'local', $5, $6, st.status, st.desired, st.addresses, st.tags, '{}'::jsonb, st.job, st.created,
              st.created, st.state, ${VIEW_OF_STATE}, st.i
       FROM stated st`,
      [from, to, last, project, refs.imageId, refs.flavorId, refs.providerId, refs.clusterId],
    );
  }
  if (settled) await settle(client, 'vm_read_model');
}

/**
 * VACUUM (ANALYZE) of a table just seeded, before anything reads it. Without it, autovacuum came within a
 * minute to vacuum the 100,000 new rows, into whichever read window was running then (HCP's detail
 * reads, measured first: bench/README.md, the twenty-first session), and the first side to read the rows
 * also paid for setting their hint bits. Vacuumed, every side reads all-visible pages with nothing left
 * for autovacuum to do.
 */
export async function settle(client: Client, table: string): Promise<void> {
  await client.query(`VACUUM (ANALYZE) ${table}`);
}

/**
 * The event history of `vms` VMs, four events each (VmCreateRequested, VmProvisioned, VmStopRequested,
 * VmStopped), appended straight into hcp_events. Within each block of 1,000 VMs the events go
 * revision by revision, so a VM's four events lie about a thousand positions apart, as in a live
 * system where many VMs change at once (a projection batch then touches ~500 distinct rows, half of
 * them existing ones it must load).
 */
export async function appendVmHistory(client: Client, vms: number, chunk = 25_000): Promise<number> {
  for (let from = 1; from <= vms; from += chunk) {
    const to = Math.min(vms, from + chunk - 1);
    await client.query(
      `WITH vm AS (
         SELECT i, ${uuidOf("'bench-vm-' || i")} AS id, ${uuidOf("'bench-job-' || i")} AS job1, ${uuidOf("'bench-job2-' || i")} AS job2,
                'p-' || (i % 100) AS project
         FROM generate_series($1::int, $2::int) AS i
       ), ev AS (
         SELECT vm.*, r,
                CASE r WHEN 0 THEN 'VmCreateRequested' WHEN 1 THEN 'VmProvisioned' WHEN 2 THEN 'VmStopRequested' ELSE 'VmStopped' END AS type,
                CASE r
                  WHEN 0 THEN jsonb_build_object(
                    'vm_id', vm.id, 'project_id', vm.project, 'job_id', vm.job1, 'name', 'vm-' || vm.i, 'zone', 'local',
                    'image_id', $3::text, 'flavor_id', $4::text,
                    'resources', jsonb_build_object('vcpus', 1, 'ram_mb', 1024, 'disk_gb', 10),
                    'placement', jsonb_build_object('provider_id', $5::text, 'cluster_id', $6::text, 'image_ref', 'template/debian-12'),
                    'tags', jsonb_build_object('env', 'dev', 'team', 'team-' || (vm.i % 20)), 'metadata', '{}'::jsonb,
                    'ssh_keys', '[]'::jsonb, 'power_on', true)
                  WHEN 1 THEN jsonb_build_object('job_id', vm.job1, 'power_state', 'running',
                    'addresses', jsonb_build_array(jsonb_build_object('type', 'ipv4', 'address', '10.0.' || (vm.i / 254 % 256) || '.' || (vm.i % 254 + 1), 'nic', 'net0')),
                    'provider_ref', jsonb_build_object('simulator_id', vm.i))
                  WHEN 2 THEN jsonb_build_object('job_id', vm.job2, 'project_id', vm.project, 'force', false)
                  ELSE jsonb_build_object('job_id', vm.job2)
                END AS data
         FROM vm CROSS JOIN generate_series(0, 3) AS r
       )
       INSERT INTO hcp_events (stream_id, revision, event_id, type, data, metadata)
       SELECT 'vm-' || ev.id, ev.r, ${uuidOf("'bench-event-' || ev.i || '-' || ev.r")}, ev.type, ev.data,
              jsonb_build_object('schema_version', 1, 'trace_id', 'bench-' || ev.i, 'actor', 'bench',
                                 'occurred_at', ${iso('now() + make_interval(secs => ev.i + ev.r)')})
       FROM ev
       ORDER BY (ev.i - 1) / 1000, ev.r, ev.i`,
      [from, to, FAKE_CATALOG.imageId, FAKE_CATALOG.flavorId, FAKE_CATALOG.providerId, FAKE_CATALOG.clusterId],
    );
  }
  return vms * 4;
}

/**
 * The quota stream of a project that already holds `vms` VMs: `vms` QuotaReserved events on
 * `quota-<project>` (what the create handler appends once per VM), so a benchmark can create VMs in a
 * project that is not new.
 */
export async function seedQuotaStream(client: Client, project: string, vms: number): Promise<void> {
  await client.query(
    `INSERT INTO hcp_events (stream_id, revision, event_id, type, data, metadata)
     SELECT 'quota-' || $1, i - 1, ${uuidOf("'bench-quota-' || $1 || '-' || i")}, 'QuotaReserved',
            jsonb_build_object('project_id', $1::text, 'vm_id', ${uuidOf("'bench-vm-' || $1 || '-' || i")},
                               'resources', jsonb_build_object('vcpus', 1, 'ram_mb', 1024, 'disk_gb', 10)),
            jsonb_build_object('schema_version', 1, 'trace_id', 'bench-seed', 'actor', 'bench', 'occurred_at', ${iso('now()')})
     FROM generate_series(1, $2::int) AS i ORDER BY i`,
    [project, vms],
  );
  await client.query(`SELECT pg_notify('public_hcp_events', '')`);
}
