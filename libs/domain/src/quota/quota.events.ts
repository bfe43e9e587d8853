import { DomainEvent } from '../events/domain-event';

/** What ops allow a project: a ceiling per resource. `instances` counts VMs, the others add up their sizes. */
export interface QuotaLimits {
  instances: number;
  vcpus: number;
  ram_mb: number;
  disk_gb: number;
}

/** What one VM holds against its project's quota (its flavor's size). */
export interface QuotaResources {
  vcpus: number;
  ram_mb: number;
  disk_gb: number;
}

/** What a project holds right now: the sum of its reservations, with one instance per VM. */
export type QuotaUsage = QuotaLimits;

export const QUOTA_RESOURCES = ['instances', 'vcpus', 'ram_mb', 'disk_gb'] as const satisfies ReadonlyArray<
  keyof QuotaLimits
>;
export type QuotaResource = (typeof QUOTA_RESOURCES)[number];

/** Ops set (or changed) a project's limits. Limits below current usage are allowed: only new reservations are refused. */
export type QuotaLimitsSet = DomainEvent<'QuotaLimitsSet', { project_id: string; limits: QuotaLimits }>;
/** A VM of the project now holds `resources` (and one instance) against the quota. */
export type QuotaReserved = DomainEvent<
  'QuotaReserved',
  { project_id: string; vm_id: string; resources: QuotaResources }
>;
/** The VM's reservation was given back (the VM was deleted, or its creation failed). */
export type QuotaReleased = DomainEvent<'QuotaReleased', { project_id: string; vm_id: string }>;

export type QuotaEvent = QuotaLimitsSet | QuotaReserved | QuotaReleased;
export type QuotaEventType = QuotaEvent['type'];

/** Current schema version of every quota event type. */
export const QUOTA_EVENT_VERSIONS: Record<QuotaEventType, number> = {
  QuotaLimitsSet: 1,
  QuotaReserved: 1,
  QuotaReleased: 1,
};

/** One quota stream per project. */
export const QUOTA_STREAM_PREFIX = 'quota-';
export const quotaStreamId = (projectId: string) => `${QUOTA_STREAM_PREFIX}${projectId}`;

export function quotaEvent<T extends QuotaEvent>(type: T['type'], data: T['data']): T {
  return { type, version: QUOTA_EVENT_VERSIONS[type], data } as T;
}
