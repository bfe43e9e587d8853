import fc from 'fast-check';
import { HcpError } from '@hcp/domain';
import type { CallContext } from '../spi/provider-driver';
import { CallSlots } from './call-slots';

/** A promise settled from outside: a provider call that ends when the test says so. */
function gate<T = void>(): { promise: Promise<T>; open(value: T): void; fail(err: unknown): void } {
  let open!: (value: T) => void;
  let fail!: (err: unknown) => void;
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

const context = (signal = new AbortController().signal, inMs = 60_000): CallContext => ({
  deadline: new Date(Date.now() + inMs),
  signal,
});

/** Lets every pending continuation run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('CallSlots', () => {
  it('runs at most its size at once and starts the waiting calls in the order they came', async () => {
    const slots = new CallSlots(2);
    const calls = [gate(), gate(), gate(), gate()];
    const started: number[] = [];
    const runs = calls.map((call, i) =>
      slots.run('createVm', context(), async () => {
        started.push(i);
        await call.promise;
        return i;
      }),
    );
    await settle();
    expect(started).toEqual([0, 1]);
    expect([slots.busy, slots.queued]).toEqual([2, 2]);

    calls[1]!.open();
    await settle();
    expect(started).toEqual([0, 1, 2]);
    calls[0]!.open();
    await settle();
    expect(started).toEqual([0, 1, 2, 3]);
    calls[2]!.open();
    calls[3]!.open();
    await expect(Promise.all(runs)).resolves.toEqual([0, 1, 2, 3]);
    expect([slots.busy, slots.queued]).toEqual([0, 0]);
  });

  it('frees the slot of a call that failed', async () => {
    const slots = new CallSlots(1);
    const failed = slots.run('startVm', context(), async () => {
      throw new HcpError('PROVIDER_UNAVAILABLE', 'down');
    });
    const next = slots.run('startVm', context(), async () => 'ran');
    await expect(failed).rejects.toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
    await expect(next).resolves.toBe('ran');
    expect(slots.busy).toBe(0);
  });

  it('refuses a waiting call whose job lost its lease, and never runs it', async () => {
    const slots = new CallSlots(1);
    const holder = gate();
    const first = slots.run('createVm', context(), () => holder.promise);
    const lease = new AbortController();
    const work = jest.fn(async () => 'ran');
    const waiting = slots.run('createVm', context(lease.signal), work);
    await settle();
    lease.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'PROVIDER_TIMEOUT', details: { reason: 'aborted' } });
    expect(slots.queued).toBe(0);

    holder.open();
    await first;
    await settle();
    expect(work).not.toHaveBeenCalled();
    expect(slots.busy).toBe(0);
  });

  it('refuses a waiting call at its deadline', async () => {
    const slots = new CallSlots(1);
    const holder = gate();
    const first = slots.run('deleteVm', context(), () => holder.promise);
    const work = jest.fn(async () => undefined);
    await expect(slots.run('deleteVm', context(undefined, 20), work)).rejects.toMatchObject({
      code: 'PROVIDER_TIMEOUT',
      details: { reason: 'deadline', provider: { operation: 'deleteVm' } },
    });
    holder.open();
    await first;
    expect(work).not.toHaveBeenCalled();
    expect([slots.busy, slots.queued]).toEqual([0, 0]);
  });

  it('refuses a call already aborted without taking a slot', async () => {
    const lease = new AbortController();
    lease.abort();
    const slots = new CallSlots(1);
    await expect(slots.run('stopVm', context(lease.signal), async () => 'ran')).rejects.toMatchObject({
      code: 'PROVIDER_TIMEOUT',
    });
    expect(slots.busy).toBe(0);
  });

  it('tells its observer the calls running and waiting after each change', async () => {
    const heard: string[] = [];
    const slots = new CallSlots(1, ({ running, waiting }) => heard.push(`${running}/${waiting}`));
    const holder = gate();
    const first = slots.run('createVm', context(), () => holder.promise);
    const second = slots.run('createVm', context(), async () => undefined);
    await settle();
    holder.open();
    await Promise.all([first, second]);
    expect(heard).toEqual(['1/0', '1/1', '1/0', '0/0']);
  });

  it('refuses a size that bounds nothing', () => {
    expect(() => new CallSlots(0)).toThrow(RangeError);
    expect(() => new CallSlots(1.5)).toThrow(RangeError);
  });

  // Chaos, as a property: calls that succeed, fail or hang until their lease is lost, in any order and
  // timing. The bound holds at every moment, every call whose lease held runs exactly once, no call
  // that left the line runs, and every slot comes back.
  it('keeps its bound and loses no call whatever the calls do', async () => {
    const call = fc.record({
      outcome: fc.constantFrom('ok', 'fail', 'abandoned'),
      startAfterMs: fc.integer({ min: 0, max: 3 }),
      runsMs: fc.integer({ min: 0, max: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(call, { minLength: 1, maxLength: 25 }),
        async (size, plan) => {
          const slots = new CallSlots(size);
          let running = 0;
          let most = 0;
          const ran = plan.map(() => 0);
          const results = await Promise.allSettled(
            plan.map(async (p, i) => {
              await new Promise((r) => setTimeout(r, p.startAfterMs));
              const lease = new AbortController();
              // An abandoned call's lease is lost a moment after it asks: waiting, or already running.
              if (p.outcome === 'abandoned') setTimeout(() => lease.abort(), 1);
              return slots.run('createVm', context(lease.signal), async () => {
                ran[i]!++;
                running++;
                most = Math.max(most, running);
                await new Promise((r) => setTimeout(r, p.runsMs));
                running--;
                if (p.outcome === 'fail') throw new HcpError('PROVIDER_UNAVAILABLE', 'down');
                return i;
              });
            }),
          );
          expect(most).toBeLessThanOrEqual(size);
          plan.forEach((p, i) => {
            const result = results[i]!;
            if (p.outcome === 'ok') expect([ran[i], result]).toEqual([1, { status: 'fulfilled', value: i }]);
            if (p.outcome === 'fail') expect([ran[i], result.status]).toEqual([1, 'rejected']);
            // An abandoned call ran once (its lease was lost while it ran), or left the line without running.
            if (p.outcome === 'abandoned' && result.status === 'fulfilled') expect(ran[i]).toBe(1);
            if (p.outcome === 'abandoned' && result.status === 'rejected') {
              expect(ran[i]).toBe(0);
              expect(result.reason).toMatchObject({ code: 'PROVIDER_TIMEOUT', details: { reason: 'aborted' } });
            }
          });
          expect([slots.busy, slots.queued]).toEqual([0, 0]);
        },
      ),
      { numRuns: 60 },
    );
  });
});
