import { createHcpEventSchemas } from '../hcp-event-schemas';
import { HcpError, HcpErrorShape } from '../errors';
import { ORPHAN_OPS_PROJECT, OrphanEvent, OrphanFacts } from './orphan.events';
import { decideOrphan, evolveOrphan, OrphanCommand, OrphanState, OrphanStatus } from './orphan.state-machine';

const ID = 'orphan-1';
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:01:00.000Z';
const T2 = '2026-01-01T00:02:00.000Z';
const FAILURE: HcpErrorShape = { code: 'PROVIDER_UNAVAILABLE', message: 'refused', retryable: true };

const facts = (over: Partial<OrphanFacts> = {}): OrphanFacts => ({
  provider_id: 'prov',
  cluster_id: 'cl',
  hcp_id: 'vm-1',
  project_id: 'p1',
  provider_ref: { node: 'pve1', vmid: 101 },
  power_state: 'stopped',
  hcp_record: 'deleted',
  ...over,
});

/** Decides and folds each command in turn, at its own time, as the aggregate repository does. */
function run(state: OrphanState | null, steps: Array<[OrphanCommand, string]>): OrphanState | null {
  for (const [command, at] of steps) {
    state = decideOrphan(state, command).reduce<OrphanState | null>((s, e) => evolveOrphan(s, e, at), state);
  }
  return state;
}

const observe = (at: string, over: Partial<OrphanFacts> = {}): [OrphanCommand, string] => [
  { type: 'observe', orphan_id: ID, facts: facts(over), scanned_at: at },
  at,
];
const found = (over: Partial<OrphanFacts> = {}) => run(null, [observe(T0, over)])!;

function orphanIn(status: OrphanStatus, over: Partial<OrphanFacts> = {}): OrphanState {
  return { ...found(over), status, job_id: status === 'open' ? null : 'job-1' };
}

function refusal(fn: () => unknown): HcpError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HcpError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

const types = (events: OrphanEvent[]) => events.map((e) => e.type);

describe('an orphan found by cluster scans', () => {
  it('opens an orphan the first time a scan lists the resource, with what the scan saw', () => {
    expect(found()).toMatchObject({
      id: ID,
      status: 'open',
      hcp_id: 'vm-1',
      hcp_record: 'deleted',
      power_state: 'stopped',
      found_at: T0,
      created_at: T0,
      job_id: null,
    });
  });

  it('records nothing when a later scan sees the open orphan unchanged', () => {
    expect(decideOrphan(found(), observe(T1)[0])).toEqual([]);
  });

  it('records what changed when a later scan sees it otherwise', () => {
    const state = run(found(), [observe(T1, { power_state: 'running', hcp_record: 'absent', project_id: null })]);
    expect(state).toMatchObject({ status: 'open', power_state: 'running', hcp_record: 'absent', project_id: null });
  });

  it('clears an open orphan the provider no longer lists, and one whose VM is live again', () => {
    for (const reason of ['not_listed', 'vm_live'] as const) {
      const events = decideOrphan(found(), { type: 'clear', reason, scanned_at: T1 });
      expect(events).toEqual([{ type: 'OrphanCleared', version: 1, data: { reason, observed_at: T1 } }]);
    }
  });

  it('never clears an orphan a destroy job owns, nor one already resolved', () => {
    for (const status of ['destroying', 'destroyed', 'adopted', 'cleared'] as const) {
      expect(decideOrphan(orphanIn(status), { type: 'clear', reason: 'not_listed', scanned_at: T2 })).toEqual([]);
    }
  });

  it('opens a resolved orphan again when a later scan lists it as an orphan again', () => {
    for (const status of ['destroyed', 'adopted', 'cleared'] as const) {
      const state = run(orphanIn(status), [observe(T2)]);
      expect(state).toMatchObject({ id: ID, status: 'open', found_at: T2, created_at: T0 });
    }
  });

  it('ignores a scan taken before the orphan last changed (a listing from before its destroy finished)', () => {
    const destroyed = run(found(), [
      [{ type: 'destroy', job_id: 'job-1', requested_by: 'ops' }, T1],
      [{ type: 'record_destroyed', job_id: 'job-1' }, T2],
    ])!;
    expect(destroyed.status).toBe('destroyed');
    expect(decideOrphan(destroyed, observe(T1)[0])).toEqual([]);
    expect(
      decideOrphan(found(), { type: 'clear', reason: 'not_listed', scanned_at: '2025-12-31T23:59:00.000Z' }),
    ).toEqual([]);
  });

  it('leaves an orphan being destroyed alone when a scan lists it: its job acts on the provider now', () => {
    expect(decideOrphan(orphanIn('destroying'), observe(T2)[0])).toEqual([]);
  });
});

describe('destroying an orphan', () => {
  it('opens a destroy job in the project of its VM, or in the ops project when HCP has no VM record', () => {
    const [withVm] = decideOrphan(found(), { type: 'destroy', job_id: 'job-1', requested_by: 'ops' });
    expect(withVm).toEqual({
      type: 'OrphanDestroyRequested',
      version: 1,
      data: { job_id: 'job-1', project_id: 'p1', requested_by: 'ops' },
    });
    const [absent] = decideOrphan(found({ hcp_record: 'absent', project_id: null }), {
      type: 'destroy',
      job_id: 'job-2',
      requested_by: 'policy',
    });
    expect(absent.data).toEqual({ job_id: 'job-2', project_id: ORPHAN_OPS_PROJECT, requested_by: 'policy' });
  });

  it('answers a repeated request with the same job with nothing new', () => {
    const destroying = run(found(), [[{ type: 'destroy', job_id: 'job-1', requested_by: 'ops' }, T1]])!;
    expect(destroying).toMatchObject({ status: 'destroying', job_id: 'job-1' });
    expect(decideOrphan(destroying, { type: 'destroy', job_id: 'job-1', requested_by: 'ops' })).toEqual([]);
  });

  it('refuses a second destroy while one runs, and any destroy of a resolved orphan, with CONFLICT', () => {
    for (const status of ['destroying', 'destroyed', 'adopted', 'cleared'] as const) {
      const err = refusal(() =>
        decideOrphan(orphanIn(status), { type: 'destroy', job_id: 'job-9', requested_by: 'ops' }),
      );
      expect(err).toMatchObject({ code: 'CONFLICT', details: { status } });
    }
  });

  it('refuses to destroy an orphan that does not exist with NOT_FOUND', () => {
    expect(refusal(() => decideOrphan(null, { type: 'destroy', job_id: 'j', requested_by: 'ops' })).code).toBe(
      'NOT_FOUND',
    );
  });

  it('records the outcome of its own job only', () => {
    const destroying = orphanIn('destroying');
    expect(decideOrphan(destroying, { type: 'record_destroyed', job_id: 'job-other' })).toEqual([]);
    expect(run(destroying, [[{ type: 'record_destroyed', job_id: 'job-1' }, T2]])).toMatchObject({
      status: 'destroyed',
    });
    const failed = run(destroying, [[{ type: 'record_destroy_failed', job_id: 'job-1', error: FAILURE }, T2]]);
    expect(failed).toMatchObject({ status: 'destroy_failed', last_error: FAILURE });
    expect(
      decideOrphan(orphanIn('destroyed'), { type: 'record_destroy_failed', job_id: 'job-1', error: FAILURE }),
    ).toEqual([]);
  });

  it('lets ops destroy again after a destroy failed (an ops retry of the job reopens it under the same id)', () => {
    const failed = { ...orphanIn('destroying'), status: 'destroy_failed' as const, last_error: FAILURE };
    const again = run(failed, [[{ type: 'destroy', job_id: 'job-1', requested_by: 'ops' }, T2]]);
    expect(again).toMatchObject({ status: 'destroying', job_id: 'job-1', last_error: null });
  });
});

describe('adopting an orphan', () => {
  it('gives the resource of a failed create back to its VM, in the power state seen now', () => {
    const events = decideOrphan(found({ hcp_record: 'failed_create' }), { type: 'adopt', power_state: 'running' });
    expect(events).toEqual([
      { type: 'OrphanAdopted', version: 1, data: { vm_id: 'vm-1', project_id: 'p1', power_state: 'running' } },
    ]);
    expect(
      run(found({ hcp_record: 'failed_create' }), [[{ type: 'adopt', power_state: 'stopped' }, T1]]),
    ).toMatchObject({
      status: 'adopted',
    });
  });

  it.each(['absent', 'deleted'] as const)(
    'refuses to adopt an orphan whose VM record is %s with CONFLICT saying to destroy it instead',
    (hcp_record) => {
      const err = refusal(() => decideOrphan(found({ hcp_record }), { type: 'adopt', power_state: 'running' }));
      expect(err.code).toBe('CONFLICT');
      expect(err.message).toMatch(/destroy it instead/);
      expect(err.details).toEqual({ hcp_record });
    },
  );

  it('refuses to adopt an orphan being destroyed or already resolved', () => {
    for (const status of ['destroying', 'destroyed', 'adopted', 'cleared'] as const) {
      const err = refusal(() =>
        decideOrphan(orphanIn(status, { hcp_record: 'failed_create' }), { type: 'adopt', power_state: 'running' }),
      );
      expect(err).toMatchObject({ code: 'CONFLICT', details: { status } });
    }
  });

  it('adopts an orphan whose destroy failed', () => {
    const failed = orphanIn('destroy_failed', { hcp_record: 'failed_create' });
    expect(types(decideOrphan(failed, { type: 'adopt', power_state: 'stopped' }))).toEqual(['OrphanAdopted']);
  });
});

describe('orphan events', () => {
  it('pass their schemas as the decider writes them', () => {
    const schemas = createHcpEventSchemas();
    const events = [
      ...decideOrphan(null, observe(T0)[0]),
      ...decideOrphan(found(), observe(T1, { power_state: 'running' })[0]),
      ...decideOrphan(found({ hcp_record: 'failed_create' }), { type: 'adopt', power_state: 'running' }),
      ...decideOrphan(found({ project_id: null }), { type: 'destroy', job_id: 'job-1', requested_by: 'ops' }),
      ...decideOrphan(orphanIn('destroying'), { type: 'record_destroyed', job_id: 'job-1' }),
      ...decideOrphan(orphanIn('destroying'), { type: 'record_destroy_failed', job_id: 'job-1', error: FAILURE }),
      ...decideOrphan(found(), { type: 'clear', reason: 'vm_live', scanned_at: T1 }),
    ];
    expect(new Set(types(events)).size).toBe(7);
    for (const event of events) expect(() => schemas.check(event)).not.toThrow();
  });
});
