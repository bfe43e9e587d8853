import type { VmState } from '@hcp/domain';
import { presentVm, VM_VIEW_FIELDS } from './vm-view';

describe('presentVm', () => {
  it('shows exactly the tenant fields, in their order, and nothing of the placement', () => {
    const state = Object.fromEntries(
      [...VM_VIEW_FIELDS, 'placement', 'resources', 'user_data'].map((f) => [f, `value of ${f}`]),
    ) as unknown as VmState;
    const view = presentVm(state);
    expect(Object.keys(view)).toEqual([...VM_VIEW_FIELDS]);
    for (const field of VM_VIEW_FIELDS) expect(view[field]).toBe(`value of ${field}`);
  });
});
