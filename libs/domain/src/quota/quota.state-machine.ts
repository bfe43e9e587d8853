import { HcpError, invalidField } from '../errors';
import {
  QUOTA_RESOURCES,
  QuotaEvent,
  QuotaLimits,
  QuotaResource,
  QuotaResources,
  QuotaUsage,
  quotaEvent,
} from './quota.events';

/**
 * A project's quota: the limits ops set (null: none set, nothing is limited) and the reservation each
 * live VM holds. Usage is always the sum of the reservations; it is derived from events only, so a
 * rebuild from the stream gives the same numbers.
 */
export interface QuotaState {
  project_id: string;
  limits: QuotaLimits | null;
  /** vm_id -> what that VM holds. */
  reservations: Record<string, QuotaResources>;
  usage: QuotaUsage;
  updated_at: string;
}

export const ZERO_QUOTA_USAGE: Readonly<QuotaUsage> = Object.freeze({ instances: 0, vcpus: 0, ram_mb: 0, disk_gb: 0 });

/** The usage a set of reservations adds up to (one instance per VM). */
export function quotaUsageOf(reservations: Readonly<Record<string, QuotaResources>>): QuotaUsage {
  return Object.values(reservations).reduce<QuotaUsage>(
    (sum, r) => ({
      instances: sum.instances + 1,
      vcpus: sum.vcpus + r.vcpus,
      ram_mb: sum.ram_mb + r.ram_mb,
      disk_gb: sum.disk_gb + r.disk_gb,
    }),
    { ...ZERO_QUOTA_USAGE },
  );
}

const isReserved = (state: QuotaState | null, vmId: string): boolean =>
  state !== null && Object.hasOwn(state.reservations, vmId);

// ---------------------------------------------------------------------------------------------------
// evolve: state + event -> state. Total and pure; used by the aggregate and by the read-model projection.

export function evolveQuota(state: QuotaState | null, event: QuotaEvent, at: string): QuotaState {
  const current: QuotaState = state ?? {
    project_id: event.data.project_id,
    limits: null,
    reservations: {},
    usage: { ...ZERO_QUOTA_USAGE },
    updated_at: at,
  };
  switch (event.type) {
    case 'QuotaLimitsSet':
      return { ...current, limits: { ...event.data.limits }, updated_at: at };
    case 'QuotaReserved': {
      const { vm_id, resources } = event.data;
      if (isReserved(current, vm_id)) return current; // a reservation is held once, whatever replays
      const held: QuotaResources = { vcpus: resources.vcpus, ram_mb: resources.ram_mb, disk_gb: resources.disk_gb };
      return {
        ...current,
        reservations: { ...current.reservations, [vm_id]: held },
        usage: {
          instances: current.usage.instances + 1,
          vcpus: current.usage.vcpus + held.vcpus,
          ram_mb: current.usage.ram_mb + held.ram_mb,
          disk_gb: current.usage.disk_gb + held.disk_gb,
        },
        updated_at: at,
      };
    }
    case 'QuotaReleased': {
      const { vm_id } = event.data;
      if (!isReserved(current, vm_id)) return current;
      const held = current.reservations[vm_id]!;
      return {
        ...current,
        reservations: Object.fromEntries(Object.entries(current.reservations).filter(([id]) => id !== vm_id)),
        usage: {
          instances: current.usage.instances - 1,
          vcpus: current.usage.vcpus - held.vcpus,
          ram_mb: current.usage.ram_mb - held.ram_mb,
          disk_gb: current.usage.disk_gb - held.disk_gb,
        },
        updated_at: at,
      };
    }
  }
}

/**
 * Evolves by many events at once, with the same result as evolving one by one. `evolveQuota` copies
 * the reservations on every event (O(n) each, so folding a stream was O(n²): minutes of CPU for a
 * project of 100,000 VMs after a restart); here they are copied once, into an object private to this
 * call, and changed in place. Pure all the same: `state` and the events are never changed.
 */
export function evolveQuotaAll(
  state: QuotaState | null,
  events: ReadonlyArray<{ event: QuotaEvent; at: string }>,
  owned?: QuotaState['reservations'],
): QuotaState | null {
  if (events.length === 0) return state;
  if (events.length === 1 && owned === undefined) return evolveQuota(state, events[0]!.event, events[0]!.at);
  const start = state ?? evolveQuota(null, events[0]!.event, events[0]!.at);
  let limits = start.limits;
  let reservations = start.reservations;
  // Reservations the caller owns (see quotaGroupFold) are changed in place instead of copied.
  let copied = owned !== undefined && reservations === owned;
  const usage = { ...start.usage };
  let updatedAt = start.updated_at;
  let changed = start !== state;
  for (const { event, at } of state ? events : events.slice(1)) {
    switch (event.type) {
      case 'QuotaLimitsSet':
        limits = { ...event.data.limits };
        break;
      case 'QuotaReserved': {
        const { vm_id, resources } = event.data;
        if (Object.hasOwn(reservations, vm_id)) continue;
        if (!copied) [reservations, copied] = [{ ...reservations }, true];
        const held: QuotaResources = { vcpus: resources.vcpus, ram_mb: resources.ram_mb, disk_gb: resources.disk_gb };
        // Defined, not assigned: a vm id of "__proto__" is data like any other.
        Object.defineProperty(reservations, vm_id, {
          value: held,
          enumerable: true,
          writable: true,
          configurable: true,
        });
        usage.instances += 1;
        usage.vcpus += held.vcpus;
        usage.ram_mb += held.ram_mb;
        usage.disk_gb += held.disk_gb;
        break;
      }
      case 'QuotaReleased': {
        const { vm_id } = event.data;
        if (!Object.hasOwn(reservations, vm_id)) continue;
        if (!copied) [reservations, copied] = [{ ...reservations }, true];
        const held = reservations[vm_id]!;
        delete reservations[vm_id];
        usage.instances -= 1;
        usage.vcpus -= held.vcpus;
        usage.ram_mb -= held.ram_mb;
        usage.disk_gb -= held.disk_gb;
        break;
      }
    }
    updatedAt = at;
    changed = true;
  }
  return changed ? { project_id: start.project_id, limits, reservations, usage, updated_at: updatedAt } : start;
}

/**
 * Folds the decisions of a group commit one after another, each on the state the one before left: the
 * reservations are copied once, at the first change, and then changed in place, so k decisions on a
 * project of n VMs cost O(n + k) instead of O(n * k). The states it returns share that copy: each is
 * exact when it is returned, and a later call adds to (or removes from) the reservations of the states
 * returned before it; their usage, limits and every other field stay their own. So use each state before
 * the next call, as a group's decisions do; the last state returned is never changed again.
 */
export function quotaGroupFold(): (
  state: QuotaState | null,
  events: ReadonlyArray<{ event: QuotaEvent; at: string }>,
) => QuotaState | null {
  let owned: QuotaState['reservations'] | undefined;
  return (state, events) => {
    if (events.length === 0) return state;
    const next = evolveQuotaAll(state, events, owned ?? {});
    // The first change copied the reservations into an object of this fold's own; it is the one changed
    // in place from then on.
    if (next && next.reservations !== state?.reservations) owned = next.reservations;
    return next;
  };
}

export function foldQuota(events: ReadonlyArray<{ event: QuotaEvent; at: string }>): QuotaState | null {
  return evolveQuotaAll(null, events);
}

// ---------------------------------------------------------------------------------------------------
// decide: state + command -> events, or a QUOTA_EXCEEDED / INVALID_REQUEST value of the taxonomy.

export type QuotaCommand =
  | { type: 'set_limits'; project_id: string; limits: QuotaLimits }
  | { type: 'reserve'; project_id: string; vm_id: string; resources: QuotaResources }
  | { type: 'release'; project_id: string; vm_id: string };

export function decideQuota(state: QuotaState | null, command: QuotaCommand): QuotaEvent[] {
  if (state && state.project_id !== command.project_id) {
    // A programming error (wrong stream): never decide one project's quota from another's.
    throw new HcpError('INTERNAL_ERROR', 'internal error');
  }
  switch (command.type) {
    case 'set_limits': {
      const limits = countsOf(command.limits, QUOTA_RESOURCES);
      return [quotaEvent('QuotaLimitsSet', { project_id: command.project_id, limits })];
    }
    case 'reserve': {
      if (isReserved(state, command.vm_id)) return []; // a retried reservation of the same VM
      const resources = countsOf(command.resources, ['vcpus', 'ram_mb', 'disk_gb'] as const);
      if (state?.limits) assertWithin(state.limits, state.usage, { instances: 1, ...resources });
      return [quotaEvent('QuotaReserved', { project_id: command.project_id, vm_id: command.vm_id, resources })];
    }
    case 'release':
      if (!isReserved(state, command.vm_id)) return []; // unknown, or given back already
      return [quotaEvent('QuotaReleased', { project_id: command.project_id, vm_id: command.vm_id })];
  }
}

/**
 * Refuses the first resource (in the order instances, vcpus, ram_mb, disk_gb) that would go over its
 * limit. A resource not asked for is never refused, even when usage is above a lowered limit.
 */
function assertWithin(limits: QuotaLimits, usage: QuotaUsage, requested: QuotaUsage): void {
  for (const resource of QUOTA_RESOURCES) {
    const asked = requested[resource];
    if (asked > 0 && usage[resource] + asked > limits[resource])
      throw quotaExceeded(resource, limits[resource], usage[resource], asked);
  }
}

export function quotaExceeded(resource: QuotaResource, limit: number, used: number, requested: number): HcpError {
  return new HcpError(
    'QUOTA_EXCEEDED',
    `the project's ${resource} quota would be exceeded (limit ${limit}, used ${used}, requested ${requested})`,
    {
      resource,
      limit,
      used,
      requested,
    },
  );
}

/** Copies exactly the named fields, each a non-negative safe integer, or refuses with INVALID_REQUEST. */
function countsOf<K extends string>(source: Record<K, number>, fields: readonly K[]): Record<K, number> {
  const out = {} as Record<K, number>;
  for (const field of fields) {
    const value = (source as Record<string, unknown> | null | undefined)?.[field];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw invalidField(field, `${field} must be an integer >= 0`);
    }
    out[field] = value;
  }
  return out;
}
