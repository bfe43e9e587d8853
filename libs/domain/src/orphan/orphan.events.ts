import { HcpErrorShape } from '../errors';
import { DomainEvent } from '../events/domain-event';

/** What HCP holds for the HCP id a provider resource carries, when that makes the resource an orphan. */
export const ORPHAN_HCP_RECORDS = ['absent', 'deleted', 'failed_create'] as const;
export type OrphanHcpRecord = (typeof ORPHAN_HCP_RECORDS)[number];

/** The power state the provider reported (the driver SPI's PowerState). */
export const ORPHAN_POWER_STATES = ['running', 'stopped', 'paused', 'unknown'] as const;
export type OrphanPowerState = (typeof ORPHAN_POWER_STATES)[number];

/** Who asked for a destroy: ops through the API, or HCP itself under HCP_ORPHAN_POLICY=destroy. */
export type OrphanDestroyRequester = 'ops' | 'policy';

/** What a cluster scan tells about one orphan. Internal: `provider_ref` never leaves HCP. */
export interface OrphanFacts {
  provider_id: string;
  cluster_id: string;
  hcp_id: string;
  /** The project of HCP's VM record for the id; null when HCP has none. */
  project_id: string | null;
  provider_ref: Record<string, unknown>;
  power_state: OrphanPowerState;
  hcp_record: OrphanHcpRecord;
}

/** A scan listed a resource whose HCP id has no live VM (first time, or again after it was resolved). */
export type OrphanFound = DomainEvent<'OrphanFound', OrphanFacts & { orphan_id: string; found_at: string }>;
/** A later scan saw the open orphan differently (powered off, its VM record deleted meanwhile, ...). */
export type OrphanObserved = DomainEvent<
  'OrphanObserved',
  Pick<OrphanFacts, 'project_id' | 'provider_ref' | 'power_state' | 'hcp_record'> & { observed_at: string }
>;
/** Ops gave the resource back to HCP's VM of the same id (a failed create); the VM took the observed state. */
export type OrphanAdopted = DomainEvent<
  'OrphanAdopted',
  { vm_id: string; project_id: string | null; power_state: 'running' | 'stopped' }
>;
/** A destroy job was opened; `project_id` is the job's (see orphanJobProject). */
export type OrphanDestroyRequested = DomainEvent<
  'OrphanDestroyRequested',
  { job_id: string; project_id: string; requested_by: OrphanDestroyRequester }
>;
export type OrphanDestroyed = DomainEvent<'OrphanDestroyed', { job_id: string }>;
export type OrphanDestroyFailed = DomainEvent<'OrphanDestroyFailed', { job_id: string; error: HcpErrorShape }>;
/**
 * The resource is no orphan any more without ops acting: the provider stopped listing it, or HCP's VM
 * of that id is live again (adopted elsewhere, reconciled).
 */
export type OrphanCleared = DomainEvent<'OrphanCleared', { reason: 'not_listed' | 'vm_live'; observed_at: string }>;

export type OrphanEvent =
  | OrphanFound
  | OrphanObserved
  | OrphanAdopted
  | OrphanDestroyRequested
  | OrphanDestroyed
  | OrphanDestroyFailed
  | OrphanCleared;
export type OrphanEventType = OrphanEvent['type'];

export const ORPHAN_EVENT_VERSIONS: Record<OrphanEventType, number> = {
  OrphanFound: 1,
  OrphanObserved: 1,
  OrphanAdopted: 1,
  OrphanDestroyRequested: 1,
  OrphanDestroyed: 1,
  OrphanDestroyFailed: 1,
  OrphanCleared: 1,
};

export const ORPHAN_STREAM_PREFIX = 'orphan-';
export const orphanStreamId = (orphanId: string) => `${ORPHAN_STREAM_PREFIX}${orphanId}`;

/**
 * The project of jobs that act on an orphan HCP has no VM record for. Not a valid tenant project id
 * (parentheses), so no tenant ever sees these jobs; it is the scope of ops idempotency keys too.
 */
export const ORPHAN_OPS_PROJECT = '(ops)';

export function orphanEvent<T extends OrphanEvent>(type: T['type'], data: T['data']): T {
  return { type, version: ORPHAN_EVENT_VERSIONS[type], data } as T;
}
