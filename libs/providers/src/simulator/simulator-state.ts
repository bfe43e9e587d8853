/**
 * The simulator's "hypervisor inventory", kept in PostgreSQL rather than in memory so that a VM
 * created before a crash is still there afterwards (the idempotency the sagas rely on is only
 * testable if the provider outlives the worker) and so that several HCP processes see one provider.
 */
import type { Pool } from 'pg';
import { HcpError, internalError, providerUnavailable } from '@hcp/domain';
import { prepared } from '@hcp/eventstore';
import type { PowerState, VmAddress } from '../spi/provider-driver';

/**
 * Where a create stands. A row is inserted in `cloning` before any work so that a retried create
 * finds it and continues instead of cloning a second VM; `ready` means the create has finished.
 */
export const SIMULATOR_PHASES = ['cloning', 'configuring', 'booting', 'ready'] as const;
export type SimulatorPhase = (typeof SIMULATOR_PHASES)[number];

export interface SimulatorVm {
  sim_id: string;
  hcp_id: string;
  name: string;
  project_id: string;
  image_ref: string;
  vcpus: number;
  ram_mb: number;
  disk_gb: number;
  tags: Record<string, string>;
  power_state: PowerState;
  addresses: VmAddress[];
  cluster_id: string;
  phase: SimulatorPhase;
  created_at: Date;
  updated_at: Date;
}

export interface NewSimulatorVm {
  hcp_id: string;
  name: string;
  project_id: string;
  image_ref: string;
  vcpus: number;
  ram_mb: number;
  disk_gb: number;
  tags: Record<string, string>;
  cluster_id: string;
  /** Where the create starts: `cloning` unless the steps before another took no time. */
  phase?: SimulatorPhase;
  /** Set with a phase past booting: the VM is running, with its address. */
  power?: SimulatorPower;
}

/** A VM's power and addresses, set together when it boots. */
export interface SimulatorPower {
  power_state: PowerState;
  addresses: VmAddress[];
}

/** The subset of pg's client/pool/TypeORM query runner that DDL needs. */
export interface DdlClient {
  query(sql: string): Promise<unknown>;
}

export const DEFAULT_SIMULATOR_SCHEMA = 'simulator';

// The schema name is interpolated into SQL (identifiers cannot be bound), so only plain
// lower-case identifiers are accepted; quoting then makes it safe.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function quoteSchema(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) {
    throw new HcpError('INVALID_REQUEST', `simulator schema name "${schema}" must match ${SCHEMA_NAME.source}`);
  }
  return `"${schema}"`;
}

/** Creates the simulator's schema and table. Idempotent; used by a migration's `up`. */
export async function installSimulatorSchema(client: DdlClient, schema = DEFAULT_SIMULATOR_SCHEMA): Promise<void> {
  const s = quoteSchema(schema);
  const phases = SIMULATOR_PHASES.map((p) => `'${p}'`).join(', ');
  // One statement per call: TypeORM query runners and pooled clients both accept that, whereas
  // multi-statement strings only work on pg's simple-query path.
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
  await client.query(`
    CREATE TABLE IF NOT EXISTS ${s}.vms (
      sim_id      uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
      hcp_id      text        NOT NULL UNIQUE,
      name        text        NOT NULL,
      project_id  text        NOT NULL,
      image_ref   text        NOT NULL,
      vcpus       integer     NOT NULL CHECK (vcpus > 0),
      ram_mb      integer     NOT NULL CHECK (ram_mb > 0),
      disk_gb     integer     NOT NULL CHECK (disk_gb > 0),
      tags        jsonb       NOT NULL DEFAULT '{}'::jsonb,
      power_state text        NOT NULL DEFAULT 'stopped'
                              CHECK (power_state IN ('running', 'stopped', 'paused', 'unknown')),
      addresses   jsonb       NOT NULL DEFAULT '[]'::jsonb,
      cluster_id  text        NOT NULL,
      phase       text        NOT NULL DEFAULT 'cloning' CHECK (phase IN (${phases})),
      created_at  timestamptz NOT NULL DEFAULT now(),
      updated_at  timestamptz NOT NULL DEFAULT now()
    )`);
}

/**
 * Removes the simulator's table and schema. Idempotent; used by a migration's `down`. Deliberately
 * without CASCADE: if someone put other objects in the schema, failing is better than dropping them.
 */
export async function dropSimulatorSchema(client: DdlClient, schema = DEFAULT_SIMULATOR_SCHEMA): Promise<void> {
  const s = quoteSchema(schema);
  await client.query(`DROP TABLE IF EXISTS ${s}.vms`);
  await client.query(`DROP SCHEMA IF EXISTS ${s}`);
}

// SQLSTATE classes and socket errors that mean "the store is not reachable right now", which for
// the simulator is the same thing as its hypervisor being unreachable: worth a retry.
const TRANSIENT_SQLSTATE_CLASSES = ['08', '40', '53', '57'];
const TRANSIENT_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

function toStateError(err: unknown): HcpError {
  if (err instanceof HcpError) return err;
  const code = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
  const message = err instanceof Error ? err.message : '';
  const transient =
    TRANSIENT_SOCKET_CODES.has(code) ||
    (code.length === 5 && TRANSIENT_SQLSTATE_CLASSES.includes(code.slice(0, 2))) ||
    /Connection terminated|timeout exceeded when trying to connect/i.test(message);
  // The database's own message stays on `cause` for logs; it is not meant for tenants.
  const wrapped = transient ? providerUnavailable('simulator state store is unavailable') : internalError();
  wrapped.cause = err;
  return wrapped;
}

interface VmRow {
  sim_id: string;
  hcp_id: string;
  name: string;
  project_id: string;
  image_ref: string;
  vcpus: number;
  ram_mb: number;
  disk_gb: number;
  tags: Record<string, string>;
  power_state: PowerState;
  addresses: VmAddress[];
  cluster_id: string;
  phase: SimulatorPhase;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  'sim_id, hcp_id, name, project_id, image_ref, vcpus, ram_mb, disk_gb, tags, power_state, addresses, ' +
  'cluster_id, phase, created_at, updated_at';

function toVm(row: VmRow): SimulatorVm {
  return {
    ...row,
    tags: row.tags ?? {},
    addresses: row.addresses ?? [],
  };
}

/**
 * Access to the simulator's inventory. Every write is a single statement guarded by its
 * precondition (ON CONFLICT, `WHERE phase = ...`) so that concurrent drivers in several processes
 * never need a lock and never duplicate a VM.
 */
export class SimulatorState {
  private readonly table: string;

  constructor(
    private readonly pool: Pool,
    readonly schema: string = DEFAULT_SIMULATOR_SCHEMA,
  ) {
    this.table = `${quoteSchema(schema)}.vms`;
  }

  /** Convenience for tests and the embedded default; deployments run the migration instead. */
  install(): Promise<void> {
    return installSimulatorSchema(this.pool, this.schema);
  }

  drop(): Promise<void> {
    return dropSimulatorSchema(this.pool, this.schema);
  }

  /**
   * Records a VM in its first phase (`cloning` unless told otherwise) unless one with this hcp_id exists:
   * the row this call inserted, or null when there was one already (the loser of a race must then read
   * and adopt the winner's row).
   */
  async insertIfAbsent(vm: NewSimulatorVm): Promise<SimulatorVm | null> {
    const rows = await this.query<VmRow>(
      `INSERT INTO ${this.table}
         (hcp_id, name, project_id, image_ref, vcpus, ram_mb, disk_gb, tags, cluster_id, phase, power_state, addresses)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12::jsonb)
       ON CONFLICT (hcp_id) DO NOTHING
       RETURNING ${COLUMNS}`,
      [
        vm.hcp_id,
        vm.name,
        vm.project_id,
        vm.image_ref,
        vm.vcpus,
        vm.ram_mb,
        vm.disk_gb,
        JSON.stringify(vm.tags),
        vm.cluster_id,
        vm.phase ?? 'cloning',
        vm.power?.power_state ?? 'stopped',
        JSON.stringify(vm.power?.addresses ?? []),
      ],
    );
    return rows[0] ? toVm(rows[0]) : null;
  }

  async findByHcpId(hcpId: string): Promise<SimulatorVm | null> {
    const rows = await this.query<VmRow>(`SELECT ${COLUMNS} FROM ${this.table} WHERE hcp_id = $1`, [hcpId]);
    return rows.length === 0 ? null : toVm(rows[0]);
  }

  async countByHcpId(hcpId: string): Promise<number> {
    const rows = await this.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${this.table} WHERE hcp_id = $1`, [
      hcpId,
    ]);
    return rows[0].n;
  }

  /** Whether the simulator's "hypervisor" (its table) answers: the connectivity check. */
  async ping(): Promise<void> {
    await this.query(`SELECT 1 FROM ${this.table} LIMIT 1`, []);
  }

  /** Every VM, or those of one cluster (the simulated hypervisor's own listing). */
  async listVms(clusterId?: string): Promise<SimulatorVm[]> {
    const rows =
      clusterId === undefined
        ? await this.query<VmRow>(`SELECT ${COLUMNS} FROM ${this.table} ORDER BY created_at, sim_id`)
        : await this.query<VmRow>(
            `SELECT ${COLUMNS} FROM ${this.table} WHERE cluster_id = $1 ORDER BY created_at, sim_id`,
            [clusterId],
          );
    return rows.map(toVm);
  }

  /** Replaces the tags of a VM; null when it does not exist. */
  async setTags(hcpId: string, tags: Record<string, string>): Promise<SimulatorVm | null> {
    const rows = await this.query<VmRow>(
      `UPDATE ${this.table} SET tags = $2::jsonb, updated_at = now() WHERE hcp_id = $1 RETURNING ${COLUMNS}`,
      [hcpId, JSON.stringify(tags)],
    );
    return rows.length === 0 ? null : toVm(rows[0]);
  }

  /**
   * Moves a create from one phase to the next, optionally setting power at the same time.
   * Returns null when the row is not in `from` any more (another driver advanced it, or it was
   * deleted); the caller re-reads and carries on from wherever it is.
   */
  async advancePhase(
    hcpId: string,
    from: SimulatorPhase,
    to: SimulatorPhase,
    power?: SimulatorPower,
  ): Promise<SimulatorVm | null> {
    const rows = power
      ? await this.query<VmRow>(
          `UPDATE ${this.table}
              SET phase = $3, power_state = $4, addresses = $5::jsonb, updated_at = now()
            WHERE hcp_id = $1 AND phase = $2
        RETURNING ${COLUMNS}`,
          [hcpId, from, to, power.power_state, JSON.stringify(power.addresses)],
        )
      : await this.query<VmRow>(
          `UPDATE ${this.table} SET phase = $3, updated_at = now()
            WHERE hcp_id = $1 AND phase = $2
        RETURNING ${COLUMNS}`,
          [hcpId, from, to],
        );
    return rows.length === 0 ? null : toVm(rows[0]);
  }

  /** Sets the power state of a finished VM; null when it does not exist (or is still being created). */
  async setPower(hcpId: string, powerState: PowerState, addresses: VmAddress[]): Promise<SimulatorVm | null> {
    const rows = await this.query<VmRow>(
      `UPDATE ${this.table}
          SET power_state = $2, addresses = $3::jsonb, updated_at = now()
        WHERE hcp_id = $1 AND phase = 'ready'
    RETURNING ${COLUMNS}`,
      [hcpId, powerState, JSON.stringify(addresses)],
    );
    return rows.length === 0 ? null : toVm(rows[0]);
  }

  /** Returns true when a row was removed. */
  async deleteByHcpId(hcpId: string): Promise<boolean> {
    const rows = await this.query<{ sim_id: string }>(`DELETE FROM ${this.table} WHERE hcp_id = $1 RETURNING sim_id`, [
      hcpId,
    ]);
    return rows.length > 0;
  }

  /** Every statement is prepared: a job's provider calls are several statements of the same few texts. */
  private async query<R>(sql: string, values: unknown[] = []): Promise<R[]> {
    try {
      const result = await this.pool.query(prepared(sql, values));
      return result.rows as R[];
    } catch (err) {
      throw toStateError(err);
    }
  }
}
