import * as fc from 'fast-check';
import { meteringRecordsOf } from '../audit/metering-record';
import { auditRecordOf } from '../audit/audit-record';
import { HcpError } from '../errors';
import { applyVmEvents, FIXTURE_AT, requestedVm, vmCreateData } from './vm-state.fixture';
import { VM_EVENT_SCHEMAS } from './vm.event-schemas';
import { VmAddress, VmEvent } from './vm.events';
import { adoptVm, ObservedVm, reconcileVm } from './vm.reconcile';
import { decideVm, evolveVm, isVanished, recordVmOutcome, VmState, VmStatus } from './vm.state-machine';

const IP = (address: string): VmAddress => ({ type: 'ipv4', address, nic: 'net0' });

function provisioned(power: 'running' | 'stopped' = 'running', addresses = [IP('10.0.0.5')]): VmState {
  const vm = requestedVm();
  return applyVmEvents(
    vm,
    recordVmOutcome(vm, {
      type: 'succeeded',
      job_id: 'job-create',
      operation: 'create',
      power_state: power,
      addresses,
    }),
  )!;
}

function failedCreate(): VmState {
  const vm = requestedVm();
  return applyVmEvents(
    vm,
    recordVmOutcome(vm, {
      type: 'failed',
      job_id: 'job-create',
      operation: 'create',
      error: { code: 'PROVIDER_UNAVAILABLE', message: 'start task failed', retryable: false },
    }),
  )!;
}

function failedDelete(): VmState {
  const running = provisioned();
  const deleting = applyVmEvents(running, decideVm(running, { type: 'delete', job_id: 'job-del' }))!;
  return applyVmEvents(
    deleting,
    recordVmOutcome(deleting, {
      type: 'failed',
      job_id: 'job-del',
      operation: 'delete',
      error: { code: 'PROVIDER_UNAVAILABLE', message: 'locked', retryable: false },
    }),
  )!;
}

const seen = (power_state: 'running' | 'stopped', addresses: VmAddress[] = []): ObservedVm => ({
  power_state,
  addresses,
});

function expectCode(fn: () => unknown, code: string) {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(HcpError);
  expect((thrown as HcpError).code).toBe(code);
}

describe('reconcileVm', () => {
  it('records a VM stopped behind HCP back as stopped, and HCP then wants it stopped too', () => {
    const vm = provisioned('running');
    const events = reconcileVm(vm, seen('stopped'));
    expect(events).toEqual([
      {
        type: 'VmStateObserved',
        version: 1,
        data: {
          project_id: 'p1',
          power_state: 'stopped',
          addresses: [],
          previous_status: 'running',
          cause: 'reconcile',
        },
      },
    ]);
    const after = applyVmEvents(vm, events)!;
    expect(after).toMatchObject({ status: 'stopped', desired_state: 'stopped', addresses: [], pending_job_id: null });
  });

  it('records a VM started behind HCP back as running with the addresses the provider reports', () => {
    const vm = provisioned('stopped', []);
    const after = applyVmEvents(vm, reconcileVm(vm, seen('running', [IP('10.0.0.9')])))!;
    expect(after).toMatchObject({ status: 'running', desired_state: 'running', addresses: [IP('10.0.0.9')] });
  });

  it('refreshes the empty addresses a reboot left once the guest agent answers', () => {
    const vm = provisioned('running', []);
    const after = applyVmEvents(vm, reconcileVm(vm, seen('running', [IP('10.0.0.7')])))!;
    expect(after.addresses).toEqual([IP('10.0.0.7')]);
    expect(after.status).toBe('running');
  });

  it('replaces addresses that changed', () => {
    const vm = provisioned('running', [IP('10.0.0.5')]);
    expect(applyVmEvents(vm, reconcileVm(vm, seen('running', [IP('10.0.0.6')])))!.addresses).toEqual([IP('10.0.0.6')]);
  });

  it('keeps the addresses of a running VM whose guest agent does not answer', () => {
    expect(reconcileVm(provisioned('running', [IP('10.0.0.5')]), seen('running', []))).toEqual([]);
  });

  it('records nothing when the provider agrees, whatever order it lists addresses in', () => {
    const two = [IP('10.0.0.5'), { type: 'ipv6' as const, address: 'fd00::5', nic: 'net0' }];
    expect(reconcileVm(provisioned('running', two), seen('running', [...two].reverse()))).toEqual([]);
    expect(reconcileVm(provisioned('stopped', []), seen('stopped'))).toEqual([]);
  });

  it('puts a VM the provider no longer has in error with NOT_FOUND and the reason vanished_at_provider', () => {
    const vm = provisioned('running');
    const events = reconcileVm(vm, null);
    expect(events).toEqual([
      {
        type: 'VmVanished',
        version: 1,
        data: { project_id: 'p1', previous_status: 'running', reason: 'vanished_at_provider' },
      },
    ]);
    const after = applyVmEvents(vm, events)!;
    expect(after.status).toBe('error');
    expect(after.addresses).toEqual([]);
    expect(after.last_error).toMatchObject({ code: 'NOT_FOUND', details: { reason: 'vanished_at_provider' } });
    expect(isVanished(after)).toBe(true);
  });

  it('records a vanished VM once, not on every pass', () => {
    const vanished = applyVmEvents(provisioned(), reconcileVm(provisioned(), null))!;
    expect(reconcileVm(vanished, null)).toEqual([]);
  });

  it('brings back a vanished VM that reappears at the provider and clears its error', () => {
    const vanished = applyVmEvents(provisioned(), reconcileVm(provisioned(), null))!;
    const back = applyVmEvents(vanished, reconcileVm(vanished, seen('stopped')))!;
    expect(back).toMatchObject({ status: 'stopped', desired_state: 'stopped', last_error: null });
  });

  for (const status of ['provisioning', 'starting', 'stopping', 'rebooting', 'deleting'] as VmStatus[]) {
    it(`leaves a VM that is ${status} to the job that owns it`, () => {
      const vm: VmState = { ...provisioned(), status, pending_job_id: 'job-x' };
      expect(reconcileVm(vm, seen('stopped'))).toEqual([]);
      expect(reconcileVm(vm, null)).toEqual([]);
    });
  }

  it('leaves a VM with a pending job alone even if its status is settled', () => {
    const vm: VmState = { ...provisioned(), pending_job_id: 'job-x' };
    expect(reconcileVm(vm, seen('stopped'))).toEqual([]);
  });

  it('ignores deleted VMs and VMs HCP never had', () => {
    expect(reconcileVm({ ...provisioned(), status: 'deleted' }, seen('running'))).toEqual([]);
    expect(reconcileVm(null, seen('running'))).toEqual([]);
  });

  it('never turns a failed create into running or stopped: its provider VM is an orphan for ops', () => {
    const vm = failedCreate();
    expect(vm.last_failed_operation).toBe('create');
    expect(reconcileVm(vm, seen('running', [IP('10.0.0.5')]))).toEqual([]);
    expect(reconcileVm(vm, null)).toEqual([]);
  });

  it('keeps a failed delete in error while the provider still has the VM, and marks it vanished once gone', () => {
    const vm = failedDelete();
    expect(reconcileVm(vm, seen('running'))).toEqual([]);
    const gone = applyVmEvents(vm, reconcileVm(vm, null))!;
    expect(isVanished(gone)).toBe(true);
    expect(gone.desired_state).toBe('deleted');
  });

  it('forgets the failed operation once a new one begins', () => {
    const vm = failedDelete();
    const deleting = applyVmEvents(vm, decideVm(vm, { type: 'delete', job_id: 'job-del-2' }))!;
    expect(deleting.last_failed_operation).toBeUndefined();
  });

  it('an observation appended while a job owns the VM changes nothing (a replayed stream)', () => {
    const vm: VmState = { ...provisioned(), status: 'stopping', pending_job_id: 'job-x' };
    const event: VmEvent = {
      type: 'VmStateObserved',
      version: 1,
      data: { project_id: 'p1', power_state: 'stopped', addresses: [], previous_status: 'running', cause: 'reconcile' },
    };
    expect(evolveVm(vm, event, FIXTURE_AT)).toBe(vm);
  });

  const address = fc.record({
    type: fc.constantFrom('ipv4' as const, 'ipv6' as const),
    address: fc.ipV4(),
    nic: fc.constantFrom('net0', 'net1'),
  });
  const observed = fc.option(
    fc.record({ power_state: fc.constantFrom('running' as const, 'stopped' as const), addresses: fc.array(address) }),
    { nil: null },
  );
  const settled = fc
    .tuple(fc.constantFrom('running' as const, 'stopped' as const), fc.array(address))
    .map(([power, addresses]) => provisioned(power, power === 'stopped' ? [] : addresses));

  it('property: after applying its events, reconciling against the same observation records nothing', () => {
    fc.assert(
      fc.property(settled, observed, (vm, seenVm) => {
        const events = reconcileVm(vm, seenVm);
        expect(events.length).toBeLessThanOrEqual(1);
        const after = applyVmEvents(vm, events)!;
        expect(reconcileVm(after, seenVm)).toEqual([]);
        if (seenVm) expect(after.status).toBe(seenVm.power_state);
        else expect(after.status).toBe('error');
        for (const e of events) expect(VM_EVENT_SCHEMAS[e.type].safeParse(e.data).success).toBe(true);
      }),
    );
  });

  it('property: the desired state always follows the observed power state, so HCP never restarts a VM', () => {
    fc.assert(
      fc.property(settled, observed, (vm, seenVm) => {
        const events = reconcileVm(vm, seenVm);
        const after = applyVmEvents(vm, events)!;
        if (seenVm && events.length > 0) expect(after.desired_state).toBe(seenVm.power_state);
      }),
    );
  });
});

describe('adoptVm', () => {
  it('adopts the provider VM of a failed create: it leaves error with the observed state', () => {
    const vm = failedCreate();
    const events = adoptVm(vm, seen('running', [IP('10.0.0.5')]));
    expect(events).toEqual([
      {
        type: 'VmStateObserved',
        version: 1,
        data: {
          project_id: 'p1',
          power_state: 'running',
          addresses: [IP('10.0.0.5')],
          previous_status: 'error',
          cause: 'adopted',
        },
      },
    ]);
    const after = applyVmEvents(vm, events)!;
    expect(after).toMatchObject({ status: 'running', desired_state: 'running', last_error: null });
    expect(after.last_failed_operation).toBeUndefined();
  });

  it('refuses with CONFLICT a VM that is not a failed create', () => {
    expectCode(() => adoptVm(provisioned(), seen('running')), 'CONFLICT');
    expectCode(() => adoptVm(failedDelete(), seen('running')), 'CONFLICT');
    expectCode(
      () => adoptVm(applyVmEvents(provisioned(), reconcileVm(provisioned(), null)), seen('running')),
      'CONFLICT',
    );
  });

  it('refuses with CONFLICT when the provider has nothing to adopt', () => {
    expectCode(() => adoptVm(failedCreate(), null), 'CONFLICT');
  });

  it('answers NOT_FOUND for a VM HCP never had', () => {
    expectCode(() => adoptVm(null, seen('running')), 'NOT_FOUND');
  });
});

describe('drift in metering and the audit trail', () => {
  const metered = { project_id: 'p1', zone: 'local', flavor_id: 'small', resources: vmCreateData().resources };
  const kinds = (event: VmEvent) => meteringRecordsOf(event, 'e1', 'vm-1', metered, FIXTURE_AT).map((r) => r.kind);

  it('meters a VM powered off behind HCP back as powered off, and one powered on as on', () => {
    expect(kinds(reconcileVm(provisioned('running'), seen('stopped'))[0])).toEqual(['vm.powered_off']);
    expect(kinds(reconcileVm(provisioned('stopped', []), seen('running'))[0])).toEqual(['vm.powered_on']);
  });

  it('meters nothing when only the addresses changed', () => {
    expect(kinds(reconcileVm(provisioned('running', []), seen('running', [IP('10.0.0.1')]))[0])).toEqual([]);
  });

  it('stops metering a vanished VM as on', () => {
    expect(kinds(reconcileVm(provisioned('running'), null)[0])).toEqual(['vm.powered_off']);
    expect(kinds(reconcileVm(provisioned('stopped', []), null)[0])).toEqual([]);
  });

  it('allocates an adopted VM, never metered before', () => {
    expect(kinds(adoptVm(failedCreate(), seen('running'))[0])).toEqual(['vm.allocated', 'vm.powered_on']);
    expect(kinds(adoptVm(failedCreate(), seen('stopped'))[0])).toEqual(['vm.allocated']);
  });

  const audit = (event: VmEvent) =>
    auditRecordOf(
      {
        event,
        event_id: '00000000-0000-4000-8000-000000000001',
        stream_id: 'vm-vm-1',
        occurred_at: FIXTURE_AT,
        actor: 'system:reconciler',
        trace_id: null,
      },
      null,
    );

  it('audits observed drift and vanished VMs with the reconciler as actor', () => {
    expect(audit(reconcileVm(provisioned('running'), seen('stopped'))[0])).toMatchObject({
      actor: 'system:reconciler',
      action: 'vm.drift_observed',
      target: { vm_id: 'vm-1' },
      project_id: 'p1',
      result: 'succeeded',
      details: { previous_status: 'running', power_state: 'stopped' },
    });
    expect(audit(reconcileVm(provisioned('running'), null)[0])).toMatchObject({
      action: 'vm.vanished',
      details: { previous_status: 'running', reason: 'vanished_at_provider' },
    });
    expect(audit(adoptVm(failedCreate(), seen('running'))[0])).toMatchObject({ action: 'vm.adopted' });
  });
});
