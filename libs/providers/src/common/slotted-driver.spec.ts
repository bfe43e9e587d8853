import type { CallContext, ProviderDriver, VmDescription } from '../spi/provider-driver';
import { CallSlots } from './call-slots';
import { slottedDriver } from './slotted-driver';

const ctx = (): CallContext => ({ deadline: new Date(Date.now() + 60_000), signal: new AbortController().signal });
const vm = (hcpId: string): VmDescription => ({
  hcp_id: hcpId,
  power_state: 'running',
  addresses: [],
  provider_ref: { provider_id: 'p', cluster_id: 'c' },
});

/** A driver whose every call waits until the test lets it end, and says which calls have started. */
function heldDriver(): { driver: ProviderDriver; started: string[]; finishAll(): void } {
  const started: string[] = [];
  const held: Array<() => void> = [];
  const call =
    <T>(name: string, value: T) =>
    (...args: unknown[]) =>
      new Promise<T>((resolve) => {
        started.push(`${name} ${String(args[0])}`);
        held.push(() => resolve(value));
      });
  const driver: ProviderDriver = {
    type: 'held',
    capabilities: () => ({}) as never,
    createVm: (spec, c) => call('createVm', vm(spec.hcp_id))(spec.hcp_id, c),
    startVm: call('startVm', vm('x')),
    stopVm: call('stopVm', vm('x')),
    rebootVm: call('rebootVm', vm('x')),
    deleteVm: call('deleteVm', undefined),
    describeVm: call('describeVm', null),
    listVms: call('listVms', []),
    openConsole: call('openConsole', {} as never),
    checkConnectivity: call('checkConnectivity', undefined),
  };
  const finishAll = () => {
    for (const finish of held.splice(0)) finish();
  };
  return { driver, started, finishAll };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('slottedDriver', () => {
  it('lets changes at the provider through only as slots free up', async () => {
    const { driver, started, finishAll } = heldDriver();
    const slotted = slottedDriver(driver, new CallSlots(2));
    const spec = { hcp_id: 'a' } as Parameters<ProviderDriver['createVm']>[0];
    const calls = [
      slotted.createVm(spec, ctx()),
      slotted.startVm('b', ctx()),
      slotted.stopVm('c', false, ctx()),
      slotted.deleteVm('d', ctx()),
    ];
    await settle();
    expect(started).toEqual(['createVm a', 'startVm b']);
    finishAll();
    await settle();
    expect(started).toEqual(['createVm a', 'startVm b', 'stopVm c', 'deleteVm d']);
    finishAll();
    await Promise.all(calls);
  });

  it('lets reads, listings and consoles through while every slot is taken', async () => {
    const { driver, started, finishAll } = heldDriver();
    const slotted = slottedDriver(driver, new CallSlots(1));
    const calls = [
      slotted.rebootVm('a', true, ctx()),
      slotted.describeVm('b', ctx()),
      slotted.listVms!(ctx()),
      slotted.openConsole('c', 'vnc' as never, ctx()),
      slotted.checkConnectivity(ctx()),
    ];
    await settle();
    // The change holds the only slot: the others started anyway (in whatever order the ticks gave).
    expect(started.sort()).toEqual(
      [
        'rebootVm a',
        'describeVm b',
        'listVms [object Object]',
        'openConsole c',
        'checkConnectivity [object Object]',
      ].sort(),
    );
    finishAll();
    await Promise.all(calls);
  });

  it('keeps the optional parts the driver has, and only those', async () => {
    const { driver } = heldDriver();
    const slotted = slottedDriver(driver, new CallSlots(1));
    expect([slotted.type, typeof slotted.listVms, slotted.updateTags, slotted.close]).toEqual([
      'held',
      'function',
      undefined,
      undefined,
    ]);

    const tagged: string[] = [];
    const withTags: ProviderDriver = {
      ...driver,
      // A method that needs its driver as `this`, as a class's does.
      updateTags(this: ProviderDriver, hcpId) {
        tagged.push(`${this.type} ${hcpId}`);
        return Promise.resolve();
      },
      close: () => Promise.resolve(),
    };
    const slottedWithTags = slottedDriver(withTags, new CallSlots(1));
    await slottedWithTags.updateTags!('a', { team: 'x' }, ctx());
    await slottedWithTags.close!();
    expect(tagged).toEqual(['held a']);
  });
});
