import { HcpError } from '../errors';
import { applyVmEvents, FIXTURE_AT, vmCreateData } from './vm-state.fixture';
import { VmCreateRequestedData, VmEvent } from './vm.events';
import { decideVm, evolveVm, foldVm, recordVmOutcome, VmCommand, VmState, VmStatus } from './vm.state-machine';

const createData = (over: Partial<VmCreateRequestedData> = {}) => vmCreateData({ tags: { env: 'dev' }, ...over });

function vmIn(status: VmStatus): VmState {
  const base = applyVmEvents(null, decideVm(null, { type: 'create', data: createData() }))!;
  return { ...base, status, pending_job_id: null };
}

function expectCode(fn: () => unknown, code: string) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HcpError);
    expect((err as HcpError).code).toBe(code);
    return;
  }
  throw new Error(`expected ${code}`);
}

const ALL_STATUSES: VmStatus[] = [
  'provisioning',
  'starting',
  'running',
  'stopping',
  'stopped',
  'rebooting',
  'deleting',
  'deleted',
  'error',
];
const ALLOWED: Record<'start' | 'stop' | 'reboot' | 'delete', VmStatus[]> = {
  start: ['stopped', 'error'],
  stop: ['running', 'error'],
  reboot: ['running'],
  delete: ['running', 'stopped', 'error'],
};

const commandOf = (op: keyof typeof ALLOWED): VmCommand =>
  op === 'stop' || op === 'reboot' ? { type: op, job_id: 'j2', force: false } : { type: op, job_id: 'j2' };

describe('VM state machine', () => {
  it('creates a provisioning VM whose desired state follows power_on', () => {
    const on = applyVmEvents(null, decideVm(null, { type: 'create', data: createData() }))!;
    expect(on.status).toBe('provisioning');
    expect(on.desired_state).toBe('running');
    expect(on.pending_job_id).toBe('job-create');
    const off = applyVmEvents(null, decideVm(null, { type: 'create', data: createData({ power_on: false }) }))!;
    expect(off.desired_state).toBe('stopped');
  });

  it('rejects creating a VM that already exists', () => {
    expectCode(() => decideVm(vmIn('running'), { type: 'create', data: createData() }), 'CONFLICT');
  });

  for (const op of Object.keys(ALLOWED) as (keyof typeof ALLOWED)[]) {
    for (const status of ALL_STATUSES) {
      if (status === 'deleted') {
        it(`answers NOT_FOUND to ${op} of a deleted VM`, () =>
          expectCode(() => decideVm(vmIn(status), commandOf(op)), 'NOT_FOUND'));
      } else if (ALLOWED[op].includes(status)) {
        it(`accepts ${op} while ${status}`, () => {
          const events = decideVm(vmIn(status), commandOf(op));
          expect(events).toHaveLength(1);
          expect(applyVmEvents(vmIn(status), events)!.pending_job_id).toBe('j2');
        });
      } else {
        it(`rejects ${op} while ${status} with CONFLICT`, () =>
          expectCode(() => decideVm(vmIn(status), commandOf(op)), 'CONFLICT'));
      }
    }
  }

  it('rejects start while deleting', () => {
    expectCode(() => decideVm(vmIn('deleting'), { type: 'start', job_id: 'x' }), 'CONFLICT');
  });

  it('rejects delete twice', () => {
    const deleting = applyVmEvents(vmIn('running'), decideVm(vmIn('running'), { type: 'delete', job_id: 'd1' }))!;
    expect(deleting.status).toBe('deleting');
    expectCode(() => decideVm(deleting, { type: 'delete', job_id: 'd2' }), 'CONFLICT');
  });

  it('answers NOT_FOUND for commands on a VM that never existed', () => {
    expectCode(() => decideVm(null, { type: 'start', job_id: 'x' }), 'NOT_FOUND');
  });

  it('walks the whole lifecycle through outcomes', () => {
    let vm = applyVmEvents(null, decideVm(null, { type: 'create', data: createData() }));
    vm = applyVmEvents(
      vm,
      recordVmOutcome(vm, {
        type: 'succeeded',
        job_id: 'job-create',
        operation: 'create',
        power_state: 'running',
        addresses: [{ type: 'ipv4', address: '10.0.0.5', nic: 'net0' }],
      }),
    );
    expect(vm).toMatchObject({ status: 'running', pending_job_id: null, last_job_id: 'job-create' });
    expect(vm!.addresses).toHaveLength(1);
    vm = applyVmEvents(vm, decideVm(vm, { type: 'stop', job_id: 's', force: false }));
    expect(vm).toMatchObject({ status: 'stopping', desired_state: 'stopped' });
    vm = applyVmEvents(vm, recordVmOutcome(vm, { type: 'succeeded', job_id: 's', operation: 'stop', addresses: [] }));
    expect(vm).toMatchObject({ status: 'stopped', addresses: [] });
    vm = applyVmEvents(vm, decideVm(vm, { type: 'start', job_id: 'st' }));
    vm = applyVmEvents(vm, recordVmOutcome(vm, { type: 'succeeded', job_id: 'st', operation: 'start', addresses: [] }));
    expect(vm!.status).toBe('running');
    vm = applyVmEvents(vm, decideVm(vm, { type: 'reboot', job_id: 'r', force: true }));
    expect(vm!.status).toBe('rebooting');
    vm = applyVmEvents(vm, recordVmOutcome(vm, { type: 'succeeded', job_id: 'r', operation: 'reboot', addresses: [] }));
    vm = applyVmEvents(vm, decideVm(vm, { type: 'delete', job_id: 'd' }));
    vm = applyVmEvents(vm, recordVmOutcome(vm, { type: 'succeeded', job_id: 'd', operation: 'delete', addresses: [] }));
    expect(vm).toMatchObject({ status: 'deleted', desired_state: 'deleted', last_job_id: 'd' });
  });

  it('ignores an outcome of a job that is not the pending one', () => {
    const vm = applyVmEvents(vm0(), decideVm(vm0(), { type: 'stop', job_id: 'current', force: false }))!;
    expect(recordVmOutcome(vm, { type: 'succeeded', job_id: 'stale', operation: 'stop', addresses: [] })).toEqual([]);
    // and evolve does not let a stale event override the newer request either
    const after = evolveVm(vm, { type: 'VmStopped', version: 1, data: { job_id: 'stale' } }, FIXTURE_AT)!;
    expect(after.status).toBe('stopping');
  });

  it('settles failed operations where the provider left the VM', () => {
    const cases: Array<[VmStatus, VmCommand, string]> = [
      ['stopped', { type: 'start', job_id: 'f' }, 'stopped'],
      ['running', { type: 'stop', job_id: 'f', force: false }, 'running'],
      ['running', { type: 'reboot', job_id: 'f', force: false }, 'running'],
      ['running', { type: 'delete', job_id: 'f' }, 'error'],
    ];
    for (const [from, cmd, expected] of cases) {
      const requested = applyVmEvents(vmIn(from), decideVm(vmIn(from), cmd))!;
      const op = cmd.type as 'start' | 'stop' | 'reboot' | 'delete';
      const failed = applyVmEvents(
        requested,
        recordVmOutcome(requested, {
          type: 'failed',
          job_id: 'f',
          operation: op,
          error: { code: 'PROVIDER_UNAVAILABLE', message: 'down', retryable: true },
        }),
      )!;
      expect(failed.status).toBe(expected);
      expect(failed.last_error?.code).toBe('PROVIDER_UNAVAILABLE');
    }
    const creating = applyVmEvents(null, decideVm(null, { type: 'create', data: createData() }))!;
    const broken = applyVmEvents(
      creating,
      recordVmOutcome(creating, {
        type: 'failed',
        job_id: 'job-create',
        operation: 'create',
        error: { code: 'PROVIDER_TIMEOUT', message: 't', retryable: true },
      }),
    )!;
    expect(broken.status).toBe('error');
  });

  it('updates labels, keeping what is not given, but not while deleting', () => {
    const vm = vmIn('running');
    const updated = applyVmEvents(vm, decideVm(vm, { type: 'update_labels', metadata: { owner: 'bob' } }))!;
    expect(updated.tags).toEqual({ env: 'dev' });
    expect(updated.metadata).toEqual({ owner: 'bob' });
    expectCode(() => decideVm(vmIn('deleting'), { type: 'update_labels', tags: {} }), 'CONFLICT');
    expectCode(() => decideVm(vm, { type: 'update_labels' }), 'INVALID_REQUEST');
  });

  it('folds a stream and ignores events before the creation', () => {
    const events = [
      { event: { type: 'VmStarted', version: 1, data: { job_id: 'x', addresses: [] } } as VmEvent, at: FIXTURE_AT },
      { event: decideVm(null, { type: 'create', data: createData() })[0], at: FIXTURE_AT },
    ];
    expect(foldVm(events)!.status).toBe('provisioning');
    expect(foldVm(events.slice(0, 1))).toBeNull();
  });
});

function vm0(): VmState {
  return vmIn('running');
}
