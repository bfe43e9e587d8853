import { reconcileVm, VmState } from '@hcp/domain';
import type { VmDescription } from '@hcp/providers';
import { requestedVm } from '../../libs/domain/src/vm/vm-state.fixture';
import { driftKindsOf, observedOf, tagsDiffer } from './drift';

/** A settled running VM, as HCP records one. */
const vm = (over: Partial<VmState> = {}): VmState => ({
  ...requestedVm({ name: 'web', tags: { env: 'dev' } }),
  status: 'running',
  addresses: [{ type: 'ipv4', address: '10.0.0.5', nic: 'net0' }],
  pending_job_id: null,
  last_job_id: 'job-1',
  ...over,
});
const described = (over: Partial<VmDescription> = {}): VmDescription => ({
  hcp_id: 'vm-1',
  power_state: 'running',
  addresses: [{ type: 'ipv4', address: '10.0.0.5', nic: 'net0' }],
  provider_ref: { provider_id: 'prov', cluster_id: 'cl' },
  tags: { env: 'dev' },
  ...over,
});

describe('drift', () => {
  it('decides nothing on a paused or half-created VM, and takes a missing one as gone', () => {
    expect(observedOf(described({ power_state: 'paused' }))).toBeUndefined();
    expect(observedOf(described({ power_state: 'unknown' }))).toBeUndefined();
    expect(observedOf(null)).toBeNull();
    expect(observedOf(described({ power_state: 'stopped', addresses: [] }))).toEqual({
      power_state: 'stopped',
      addresses: [],
    });
  });

  it('names the kinds of drift a decision records', () => {
    const running = vm();
    expect(driftKindsOf(running, reconcileVm(running, { power_state: 'stopped', addresses: [] }))).toEqual([
      'power_state',
      'addresses',
    ]);
    const rebooted = vm({ addresses: [] });
    expect(
      driftKindsOf(
        rebooted,
        reconcileVm(rebooted, {
          power_state: 'running',
          addresses: [{ type: 'ipv4', address: '10.0.0.9', nic: 'net0' }],
        }),
      ),
    ).toEqual(['addresses']);
    expect(driftKindsOf(running, reconcileVm(running, null))).toEqual(['vanished']);
  });

  it('writes tags only for a settled VM whose provider reports other tags', () => {
    expect(tagsDiffer(vm(), described())).toBe(false);
    expect(tagsDiffer(vm(), described({ tags: { env: 'prod' } }))).toBe(true);
    expect(tagsDiffer(vm(), described({ tags: { env: 'dev', extra: '' } }))).toBe(true);
    expect(tagsDiffer(vm(), described({ tags: undefined }))).toBe(false);
    expect(tagsDiffer(vm({ pending_job_id: 'job-2', status: 'stopping' }), described({ tags: {} }))).toBe(false);
    expect(tagsDiffer(vm({ status: 'error' }), described({ tags: {} }))).toBe(false);
    expect(tagsDiffer(vm(), null)).toBe(false);
  });
});
