import { HcpErrorShape } from '../errors';
import { VmEvent } from '../vm/vm.events';
import { applyVmEvents, vmCreateData } from '../vm/vm-state.fixture';
import { decideVm, recordVmOutcome, VmState, VmStatus } from '../vm/vm.state-machine';
import { orphanRecordOf } from './orphan-rule';

const FAILURE: HcpErrorShape = { code: 'PROVIDER_UNAVAILABLE', message: 'refused', retryable: false };

/** A VM built the way HCP builds one: by deciding each step and folding the events. */
class VmHistory {
  private state: VmState | null = null;
  private jobs = 0;

  static created(): VmHistory {
    return new VmHistory().apply(decideVm(null, { type: 'create', data: vmCreateData() }));
  }

  provisioned(): this {
    return this.outcome({ type: 'succeeded', operation: 'create', addresses: [] }, 'job-create');
  }

  createFailed(): this {
    return this.outcome({ type: 'failed', operation: 'create', error: FAILURE }, 'job-create');
  }

  requestDelete(): string {
    const job_id = `job-${++this.jobs}`;
    this.apply(decideVm(this.state, { type: 'delete', job_id }));
    return job_id;
  }

  deleteFailed(): this {
    const job = this.requestDelete();
    return this.outcome({ type: 'failed', operation: 'delete', error: FAILURE }, job);
  }

  deleted(): this {
    const job = this.requestDelete();
    return this.outcome({ type: 'succeeded', operation: 'delete', addresses: [] }, job);
  }

  startFailed(): this {
    const job_id = `job-${++this.jobs}`;
    this.apply(decideVm(this.state, { type: 'start', job_id }));
    return this.outcome({ type: 'failed', operation: 'start', error: FAILURE }, job_id);
  }

  get vm(): VmState {
    return this.state!;
  }

  private outcome(
    outcome:
      | { type: 'succeeded'; operation: 'create' | 'delete'; addresses: [] }
      | { type: 'failed'; operation: 'create' | 'delete' | 'start'; error: HcpErrorShape },
    job_id: string,
  ): this {
    return this.apply(recordVmOutcome(this.state, { ...outcome, job_id }));
  }

  private apply(events: VmEvent[]): this {
    this.state = applyVmEvents(this.state, events);
    return this;
  }
}

/** A record as folded before the failed operation was kept on it. */
const withoutFailedOperation = (vm: VmState): VmState => {
  const copy = { ...vm };
  delete copy.last_failed_operation;
  return copy;
};

describe('what makes a provider resource an orphan', () => {
  it('is an orphan when HCP has no VM with its HCP id', () => {
    expect(orphanRecordOf(null)).toBe('absent');
  });

  it('is an orphan when the VM with its HCP id is deleted', () => {
    expect(orphanRecordOf(VmHistory.created().provisioned().deleted().vm)).toBe('deleted');
  });

  it('is an orphan when the VM with its HCP id is in error because its create failed', () => {
    const vm = VmHistory.created().createFailed().vm;
    expect(vm.status).toBe('error');
    expect(orphanRecordOf(vm)).toBe('failed_create');
  });

  it('is not an orphan when the VM is in error because its delete failed: the tenant deletes it again', () => {
    const vm = VmHistory.created().provisioned().deleteFailed().vm;
    expect(vm.status).toBe('error');
    expect(orphanRecordOf(vm)).toBeNull();
  });

  it('is not an orphan while the tenant deletes a VM whose create failed, and is once it is deleted', () => {
    const history = VmHistory.created().createFailed();
    history.requestDelete();
    expect(history.vm.status).toBe('deleting');
    expect(orphanRecordOf(history.vm)).toBeNull();
    expect(orphanRecordOf(VmHistory.created().createFailed().deleted().vm)).toBe('deleted');
  });

  it('is not an orphan while its create job still runs', () => {
    expect(orphanRecordOf(VmHistory.created().vm)).toBeNull();
  });

  it('is not an orphan when a start after a failed create failed too (the VM owns a stopped resource)', () => {
    const vm = VmHistory.created().createFailed().startFailed().vm;
    expect(vm.status).toBe('stopped');
    expect(orphanRecordOf(vm)).toBeNull();
  });

  it.each<VmStatus>(['provisioning', 'starting', 'running', 'stopping', 'stopped', 'rebooting', 'deleting'])(
    'is not an orphan when its VM is %s',
    (status) => {
      const vm = { ...VmHistory.created().provisioned().vm, status };
      expect(orphanRecordOf(vm)).toBeNull();
    },
  );

  it('reads an errored record folded before failed operations were kept by what the VM wanted', () => {
    expect(orphanRecordOf(withoutFailedOperation(VmHistory.created().createFailed().vm))).toBe('failed_create');
    expect(orphanRecordOf(withoutFailedOperation(VmHistory.created().provisioned().deleteFailed().vm))).toBeNull();
  });

  it('is not an orphan when its VM is in error because the provider had lost it', () => {
    const vanished: VmState = withoutFailedOperation({
      ...VmHistory.created().provisioned().vm,
      status: 'error',
      last_error: { code: 'NOT_FOUND', message: 'gone', details: { reason: 'vanished_at_provider' }, retryable: false },
    });
    expect(orphanRecordOf(vanished)).toBeNull();
  });
});
