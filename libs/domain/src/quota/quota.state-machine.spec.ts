import fc from 'fast-check';
import { HcpError, HTTP_STATUS_OF } from '../errors';
import {
  QUOTA_EVENT_VERSIONS,
  QUOTA_RESOURCES,
  QuotaEvent,
  QuotaLimits,
  QuotaResources,
  quotaStreamId,
} from './quota.events';
import {
  decideQuota,
  evolveQuota,
  evolveQuotaAll,
  foldQuota,
  QuotaCommand,
  QuotaState,
  quotaUsageOf,
  ZERO_QUOTA_USAGE,
} from './quota.state-machine';

const AT = '2026-01-01T00:00:00.000Z';
const P = 'p1';
const SMALL: QuotaResources = { vcpus: 1, ram_mb: 512, disk_gb: 10 };
const LIMITS: QuotaLimits = { instances: 3, vcpus: 4, ram_mb: 2048, disk_gb: 100 };

function apply(state: QuotaState | null, events: QuotaEvent[]): QuotaState | null {
  return events.reduce<QuotaState | null>((s, e) => evolveQuota(s, e, AT), state);
}

/** Decides and applies, like the aggregate repository does. */
function run(state: QuotaState | null, command: QuotaCommand): QuotaState | null {
  return apply(state, decideQuota(state, command));
}

const setLimits = (limits: QuotaLimits): QuotaCommand => ({ type: 'set_limits', project_id: P, limits });
const reserve = (vm_id: string, resources: QuotaResources = SMALL): QuotaCommand => ({
  type: 'reserve',
  project_id: P,
  vm_id,
  resources,
});
const release = (vm_id: string): QuotaCommand => ({ type: 'release', project_id: P, vm_id });

function withLimits(limits: QuotaLimits = LIMITS): QuotaState {
  return run(null, setLimits(limits))!;
}

function caught(fn: () => unknown): HcpError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HcpError);
    return err as HcpError;
  }
  throw new Error('expected an HcpError');
}

describe('quota events', () => {
  it('are versioned and live in one stream per project', () => {
    const events = [
      ...decideQuota(null, setLimits(LIMITS)),
      ...decideQuota(null, reserve('a')),
      ...decideQuota(run(null, reserve('a')), release('a')),
    ];
    expect(events.map((e) => e.type).sort()).toEqual(Object.keys(QUOTA_EVENT_VERSIONS).sort());
    for (const e of events) expect(e.version).toBe(QUOTA_EVENT_VERSIONS[e.type]);
    expect(quotaStreamId('p1')).toBe('quota-p1');
  });
});

describe('quota state machine: set_limits', () => {
  it('starts unlimited: no limits, zero usage', () => {
    const state = run(null, reserve('a'))!;
    expect(state.limits).toBeNull();
    expect(state.project_id).toBe(P);
    expect(state.usage).toEqual({ instances: 1, vcpus: 1, ram_mb: 512, disk_gb: 10 });
  });

  it('records limits and replaces them on a second set', () => {
    const first = withLimits();
    expect(first).toMatchObject({ project_id: P, limits: LIMITS, usage: ZERO_QUOTA_USAGE });
    expect(first.reservations.size).toBe(0);
    const second = run(first, setLimits({ instances: 10, vcpus: 20, ram_mb: 4096, disk_gb: 500 }))!;
    expect(second.limits).toEqual({ instances: 10, vcpus: 20, ram_mb: 4096, disk_gb: 500 });
  });

  it('emits exactly the four limits, dropping anything else', () => {
    const [event] = decideQuota(null, setLimits({ ...LIMITS, extra: 7 } as unknown as QuotaLimits));
    expect(event).toEqual({ type: 'QuotaLimitsSet', version: 1, data: { project_id: P, limits: LIMITS } });
  });

  it('accepts zero limits', () => {
    expect(withLimits({ instances: 0, vcpus: 0, ram_mb: 0, disk_gb: 0 }).limits).toEqual({
      instances: 0,
      vcpus: 0,
      ram_mb: 0,
      disk_gb: 0,
    });
  });

  for (const field of QUOTA_RESOURCES) {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '3', null, undefined]) {
      it(`refuses ${field} = ${String(bad)} with INVALID_REQUEST naming the field`, () => {
        const err = caught(() => decideQuota(null, setLimits({ ...LIMITS, [field]: bad } as unknown as QuotaLimits)));
        expect(err.code).toBe('INVALID_REQUEST');
        expect(err.details).toEqual({ fields: [{ field, problems: [expect.any(String)] }] });
      });
    }
  }

  it('allows lowering limits below current usage; only new reservations are refused', () => {
    let state = run(withLimits(), reserve('a'));
    state = run(state, reserve('b'));
    state = run(state, setLimits({ instances: 1, vcpus: 1, ram_mb: 512, disk_gb: 10 }))!;
    expect(state.usage.instances).toBe(2);
    expect([...state.reservations.keys()].sort()).toEqual(['a', 'b']);
    expect(caught(() => decideQuota(state, reserve('c'))).details).toEqual({
      resource: 'instances',
      limit: 1,
      used: 2,
      requested: 1,
    });
    // releasing still works, and capacity comes back once usage is under the new limit
    state = run(run(state, release('a')), release('b'))!;
    expect(decideQuota(state, reserve('c'))).toHaveLength(1);
  });
});

describe('quota state machine: reserve', () => {
  it('reserves without limits (no quota set means unlimited)', () => {
    let state: QuotaState | null = null;
    for (let i = 0; i < 50; i++) state = run(state, reserve(`vm-${i}`, { vcpus: 64, ram_mb: 262144, disk_gb: 4096 }));
    expect(state!.usage).toEqual({ instances: 50, vcpus: 3200, ram_mb: 13107200, disk_gb: 204800 });
  });

  it('adds the reservation and its usage', () => {
    const events = decideQuota(withLimits(), reserve('a', { vcpus: 2, ram_mb: 1024, disk_gb: 20 }));
    expect(events).toEqual([
      {
        type: 'QuotaReserved',
        version: 1,
        data: { project_id: P, vm_id: 'a', resources: { vcpus: 2, ram_mb: 1024, disk_gb: 20 } },
      },
    ]);
    const state = apply(withLimits(), events)!;
    expect(state.reservations.toJS()).toEqual({ a: { vcpus: 2, ram_mb: 1024, disk_gb: 20 } });
    expect(state.usage).toEqual({ instances: 1, vcpus: 2, ram_mb: 1024, disk_gb: 20 });
  });

  it('is a no-op for a VM that already holds a reservation', () => {
    const state = run(withLimits(), reserve('a'))!;
    expect(decideQuota(state, reserve('a'))).toEqual([]);
    expect(decideQuota(state, reserve('a', { vcpus: 99, ram_mb: 99, disk_gb: 99 }))).toEqual([]);
  });

  it('accepts up to exactly the limit, inclusive', () => {
    let state: QuotaState | null = withLimits({ instances: 3, vcpus: 100, ram_mb: 100000, disk_gb: 1000 });
    for (const id of ['a', 'b', 'c']) state = run(state, reserve(id));
    expect(state!.usage.instances).toBe(3);
    const err = caught(() => decideQuota(state, reserve('d')));
    expect(err.code).toBe('QUOTA_EXCEEDED');
    expect(err.httpStatus).toBe(403);
    expect(HTTP_STATUS_OF.QUOTA_EXCEEDED).toBe(403);
    expect(err.retryable).toBe(false);
    expect(err.details).toEqual({ resource: 'instances', limit: 3, used: 3, requested: 1 });
  });

  const roomy: QuotaLimits = { instances: 100, vcpus: 100, ram_mb: 100000, disk_gb: 1000 };
  const cases: Array<{
    resource: keyof QuotaLimits;
    limits: QuotaLimits;
    ask: QuotaResources;
    used: number;
    requested: number;
  }> = [
    { resource: 'instances', limits: { ...roomy, instances: 1 }, ask: SMALL, used: 1, requested: 1 },
    { resource: 'vcpus', limits: { ...roomy, vcpus: 2 }, ask: { ...SMALL, vcpus: 2 }, used: 1, requested: 2 },
    {
      resource: 'ram_mb',
      limits: { ...roomy, ram_mb: 1000 },
      ask: { ...SMALL, ram_mb: 600 },
      used: 512,
      requested: 600,
    },
    { resource: 'disk_gb', limits: { ...roomy, disk_gb: 15 }, ask: { ...SMALL, disk_gb: 6 }, used: 10, requested: 6 },
  ];
  for (const c of cases) {
    it(`refuses when ${c.resource} would go over, with resource, limit, used and requested in details`, () => {
      const state = run(withLimits(c.limits), reserve('first'))!;
      const err = caught(() => decideQuota(state, reserve('second', c.ask)));
      expect(err.code).toBe('QUOTA_EXCEEDED');
      expect(err.details).toEqual({
        resource: c.resource,
        limit: c.limits[c.resource],
        used: c.used,
        requested: c.requested,
      });
      expect(err.message).toContain(c.resource);
    });
  }

  it('names the first exceeded resource in the order instances, vcpus, ram_mb, disk_gb', () => {
    const full = run(withLimits({ instances: 1, vcpus: 1, ram_mb: 512, disk_gb: 10 }), reserve('a'))!;
    expect(caught(() => decideQuota(full, reserve('b'))).details!.resource).toBe('instances');
    const noCpu = run(withLimits({ instances: 5, vcpus: 1, ram_mb: 512, disk_gb: 10 }), reserve('a'))!;
    expect(caught(() => decideQuota(noCpu, reserve('b'))).details!.resource).toBe('vcpus');
    const noRam = run(withLimits({ instances: 5, vcpus: 5, ram_mb: 512, disk_gb: 10 }), reserve('a'))!;
    expect(caught(() => decideQuota(noRam, reserve('b'))).details!.resource).toBe('ram_mb');
  });

  it('refuses everything when a limit is zero', () => {
    expect(caught(() => decideQuota(withLimits({ ...LIMITS, instances: 0 }), reserve('a'))).details).toEqual({
      resource: 'instances',
      limit: 0,
      used: 0,
      requested: 1,
    });
    expect(caught(() => decideQuota(withLimits({ ...LIMITS, disk_gb: 0 }), reserve('a'))).details).toEqual({
      resource: 'disk_gb',
      limit: 0,
      used: 0,
      requested: 10,
    });
  });

  it('does not refuse a resource that is not asked for, even above a lowered limit', () => {
    let state = run(withLimits(), reserve('a', { vcpus: 1, ram_mb: 512, disk_gb: 50 }));
    state = run(state, setLimits({ ...LIMITS, disk_gb: 10 }))!;
    expect(decideQuota(state, reserve('diskless', { vcpus: 1, ram_mb: 512, disk_gb: 0 }))).toHaveLength(1);
    expect(caught(() => decideQuota(state, reserve('b', SMALL))).details!.resource).toBe('disk_gb');
  });

  for (const field of ['vcpus', 'ram_mb', 'disk_gb'] as const) {
    it(`refuses a reservation whose ${field} is not an integer >= 0`, () => {
      expect(caught(() => decideQuota(null, reserve('a', { ...SMALL, [field]: -1 }))).code).toBe('INVALID_REQUEST');
      expect(caught(() => decideQuota(null, reserve('a', { ...SMALL, [field]: 0.5 }))).code).toBe('INVALID_REQUEST');
    });
  }

  it("never decides one project from another project's state", () => {
    const other = run(null, { type: 'set_limits', project_id: 'p2', limits: LIMITS });
    expect(caught(() => decideQuota(other, reserve('a'))).code).toBe('INTERNAL_ERROR');
  });
});

describe('quota state machine: release', () => {
  it('gives the reservation back', () => {
    let state = run(withLimits(), reserve('a', { vcpus: 2, ram_mb: 1024, disk_gb: 20 }));
    state = run(state, reserve('b'));
    const events = decideQuota(state, release('a'));
    expect(events).toEqual([{ type: 'QuotaReleased', version: 1, data: { project_id: P, vm_id: 'a' } }]);
    state = apply(state, events)!;
    expect(state.reservations.toJS()).toEqual({ b: SMALL });
    expect(state.usage).toEqual({ instances: 1, vcpus: 1, ram_mb: 512, disk_gb: 10 });
  });

  it('frees capacity for a new reservation', () => {
    let state = run(withLimits({ ...LIMITS, instances: 1 }), reserve('a'));
    expect(caught(() => decideQuota(state, reserve('b'))).code).toBe('QUOTA_EXCEEDED');
    state = run(state, release('a'));
    expect(decideQuota(state, reserve('b'))).toHaveLength(1);
  });

  it('is a no-op for an unknown VM, a released VM and a project without a stream', () => {
    const state = run(run(withLimits(), reserve('a')), release('a'))!;
    expect(decideQuota(state, release('a'))).toEqual([]);
    expect(decideQuota(state, release('never'))).toEqual([]);
    expect(decideQuota(null, release('x'))).toEqual([]);
  });

  it('lets a released VM id be reserved again', () => {
    const state = run(run(withLimits(), reserve('a')), release('a'))!;
    expect(decideQuota(state, reserve('a'))).toHaveLength(1);
  });
});

describe('quota evolve', () => {
  it('ignores a replayed reservation and a release of what is not held', () => {
    const reserved: QuotaEvent = {
      type: 'QuotaReserved',
      version: 1,
      data: { project_id: P, vm_id: 'a', resources: SMALL },
    };
    const released: QuotaEvent = { type: 'QuotaReleased', version: 1, data: { project_id: P, vm_id: 'a' } };
    const twice = apply(null, [reserved, reserved])!;
    expect(twice.usage.instances).toBe(1);
    const state = apply(twice, [released, released])!;
    expect(state.usage).toEqual(ZERO_QUOTA_USAGE);
    expect(apply(null, [released])!.usage).toEqual(ZERO_QUOTA_USAGE);
  });

  it('keeps vm ids that look like object keys as plain data', () => {
    const state = run(run(null, reserve('__proto__')), reserve('constructor'))!;
    expect(state.usage.instances).toBe(2);
    expect([...state.reservations.keys()].sort()).toEqual(['__proto__', 'constructor']);
    expect(decideQuota(null, release('toString'))).toEqual([]);
    expect(decideQuota(state, release('toString'))).toEqual([]);
    expect(run(run(state, release('__proto__')), release('constructor'))!.usage).toEqual(ZERO_QUOTA_USAGE);
  });

  it('records when it last changed', () => {
    const state = evolveQuota(
      null,
      { type: 'QuotaLimitsSet', version: 1, data: { project_id: P, limits: LIMITS } },
      '2026-02-02T00:00:00.000Z',
    );
    expect(state.updated_at).toBe('2026-02-02T00:00:00.000Z');
  });

  it('folds a stream, and an empty stream to nothing', () => {
    const events = [...decideQuota(null, setLimits(LIMITS)), ...decideQuota(null, reserve('a'))].map((event) => ({
      event,
      at: AT,
    }));
    expect(foldQuota(events)!.usage.instances).toBe(1);
    expect(foldQuota([])).toBeNull();
  });
});

describe('quota properties', () => {
  const resources = fc.record({
    vcpus: fc.integer({ min: 0, max: 8 }),
    ram_mb: fc.integer({ min: 0, max: 4096 }),
    disk_gb: fc.integer({ min: 0, max: 100 }),
  });
  const limits = fc.record({
    instances: fc.integer({ min: 0, max: 6 }),
    vcpus: fc.integer({ min: 0, max: 30 }),
    ram_mb: fc.integer({ min: 0, max: 16384 }),
    disk_gb: fc.integer({ min: 0, max: 400 }),
  });
  const vmId = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h');
  const command: fc.Arbitrary<QuotaCommand> = fc.oneof(
    limits.map((l) => setLimits(l)),
    fc.tuple(vmId, resources).map(([id, r]) => reserve(id, r)),
    vmId.map((id) => release(id)),
  );

  it('keeps usage equal to the sum of the reservations, refuses only what goes over, and folds back to the same state', () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 60 }), (commands) => {
        let state: QuotaState | null = null;
        const log: QuotaEvent[] = [];
        for (const c of commands) {
          let events: QuotaEvent[];
          try {
            events = decideQuota(state, c);
          } catch (err) {
            // The only refusal is QUOTA_EXCEEDED, and only for a new reservation that really goes over.
            expect((err as HcpError).code).toBe('QUOTA_EXCEEDED');
            expect(c.type).toBe('reserve');
            const { resource, limit, used, requested } = (err as HcpError).details as {
              resource: keyof QuotaLimits;
              limit: number;
              used: number;
              requested: number;
            };
            expect(state!.limits![resource]).toBe(limit);
            expect(state!.usage[resource]).toBe(used);
            expect(used + requested).toBeGreaterThan(limit);
            continue;
          }
          const before = state;
          state = apply(state, events);
          log.push(...events);
          if (c.type === 'reserve' && events.length > 0 && before?.limits) {
            // an accepted reservation never takes a requested resource above its limit
            for (const r of QUOTA_RESOURCES) {
              const asked = r === 'instances' ? 1 : c.resources[r];
              if (asked > 0) expect(state!.usage[r]).toBeLessThanOrEqual(before.limits[r]);
            }
          }
          if (!state) continue; // a release before anything happened decides nothing
          expect(state.usage).toEqual(quotaUsageOf(state.reservations.values()));
          for (const r of QUOTA_RESOURCES) expect(state.usage[r]).toBeGreaterThanOrEqual(0);
        }
        // rebuild: folding the decided events again gives the very same state
        expect(foldQuota(log.map((event) => ({ event, at: AT })))).toEqual(state);
      }),
      { numRuns: 300 },
    );
  });

  it('never lets more reservations than the instance limit through, in any order', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 8 }), fc.array(vmId, { minLength: 1, maxLength: 30 }), (instances, ids) => {
        let state: QuotaState | null = withLimits({ instances, vcpus: 1000, ram_mb: 1_000_000, disk_gb: 100_000 });
        for (const id of ids) {
          try {
            state = run(state, reserve(id));
          } catch (err) {
            expect((err as HcpError).code).toBe('QUOTA_EXCEEDED');
          }
        }
        expect(state!.usage.instances).toBe(Math.min(instances, new Set(ids).size));
      }),
    );
  });

  it('evolves many events at once exactly as one by one, and leaves the state it starts from as it was', () => {
    const event: fc.Arbitrary<QuotaEvent> = fc.oneof(
      limits.map((l): QuotaEvent => ({ type: 'QuotaLimitsSet', version: 1, data: { project_id: P, limits: l } })),
      fc.tuple(fc.oneof(vmId, fc.constant('__proto__')), resources).map(
        ([id, r]): QuotaEvent => ({
          type: 'QuotaReserved',
          version: 1,
          data: { project_id: P, vm_id: id, resources: r },
        }),
      ),
      fc
        .oneof(vmId, fc.constant('__proto__'))
        .map((id): QuotaEvent => ({ type: 'QuotaReleased', version: 1, data: { project_id: P, vm_id: id } })),
    );
    const timed = fc
      .array(fc.tuple(event, fc.integer({ min: 0, max: 1e6 })), { maxLength: 40 })
      .map((list) => list.map(([e, t]) => ({ event: e, at: new Date(Date.UTC(2026, 0, 1) + t * 1000).toISOString() })));
    const oneByOne = (state: QuotaState | null, events: Array<{ event: QuotaEvent; at: string }>) =>
      events.reduce<QuotaState | null>((s, { event, at }) => evolveQuota(s, event, at), state);
    fc.assert(
      fc.property(timed, timed, (history, more) => {
        const start = oneByOne(null, history);
        const before = start && { ...start, reservations: start.reservations.toJS() };
        const expected = oneByOne(start, more);
        const actual = evolveQuotaAll(start, more);
        expect(actual).toEqual(expected);
        if (actual) expect(actual.usage).toEqual(quotaUsageOf(actual.reservations.values()));
        expect(start && { ...start, reservations: start.reservations.toJS() }).toEqual(before);
        if (expected === start) expect(actual).toBe(start);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps every state a run of decisions passed through, as a group commit hands them out', () => {
    // A group's decisions each get the state after their own events; a later decision must not change it.
    let state: QuotaState | null = withLimits({ instances: 1_000, vcpus: 1_000, ram_mb: 1_000_000, disk_gb: 100_000 });
    const seen: Array<[QuotaState, string[]]> = [];
    for (let i = 0; i < 300; i++) {
      state = run(state, i % 7 === 6 ? release(`vm-${i - 3}`) : reserve(`vm-${i}`))!;
      seen.push([state, [...state.reservations.keys()].sort()]);
    }
    for (const [kept, keys] of seen) {
      expect([...kept.reservations.keys()].sort()).toEqual(keys);
      expect(kept.usage).toEqual(quotaUsageOf(kept.reservations.values()));
    }
  });
});
