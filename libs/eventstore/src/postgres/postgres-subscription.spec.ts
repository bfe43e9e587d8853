import type { RecordedEvent } from '../event-store.port';
import type { NotificationListener } from './notification-listener';
import { PostgresSubscription, type SubscriptionPage } from './postgres-subscription';

const event = (position: number): RecordedEvent => ({
  id: `00000000-0000-4000-8000-${String(position).padStart(12, '0')}`,
  streamId: `vm-${position}`,
  revision: 0n,
  position: BigInt(position),
  type: 'VmCreateRequested',
  data: {},
  metadata: {},
  recordedAt: new Date(0),
});

/** Pages of `size` events over positions 1..total; a read that reaches the end is not full. */
function pagesOf(total: number, size: number) {
  return (after: bigint): SubscriptionPage => {
    const events = [];
    for (let p = Number(after) + 1; p <= total && events.length < size; p++) events.push(event(p));
    return { events, scannedTo: events.at(-1)?.position, full: events.length === size, blocked: false };
  };
}

const listener = { add: () => undefined, remove: async () => undefined } as unknown as NotificationListener;

function subscribe(
  readPage: (after: bigint) => Promise<SubscriptionPage>,
  handler: (e: RecordedEvent) => Promise<void>,
) {
  const errors: unknown[] = [];
  const subscription = new PostgresSubscription({
    readPage,
    listener,
    prefixes: null,
    handler,
    from: 0n,
    pollIntervalMs: 10_000,
    retryBudgetMs: 1_000,
    onError: (err) => errors.push(err),
    onEnded: () => undefined,
  });
  return { subscription, errors };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('PostgresSubscription', () => {
  it('reads the page after a full one while the handler still works on it', async () => {
    const page = pagesOf(5, 2);
    const reads: string[] = [];
    const handled: number[] = [];
    const { subscription } = subscribe(
      async (after) => {
        reads.push(`read after ${after} (handled ${handled.length})`);
        return page(after);
      },
      async (e) => {
        await settle();
        handled.push(Number(e.position));
      },
    );
    while (handled.length < 5) await settle();
    await subscription.stop();

    expect(handled).toEqual([1, 2, 3, 4, 5]);
    expect(reads.slice(0, 3)).toEqual([
      'read after 0 (handled 0)',
      'read after 2 (handled 0)',
      'read after 4 (handled 2)',
    ]);
  });

  it('reads nothing ahead of a page that is not full', async () => {
    const page = pagesOf(1, 2);
    let reads = 0;
    const { subscription } = subscribe(
      async (after) => {
        reads++;
        return page(after);
      },
      async () => undefined,
    );
    await settle();
    await settle();
    await subscription.stop();
    expect(reads).toBe(1);
  });

  it('reads again from the end of the handled page when the read ahead fails', async () => {
    const page = pagesOf(4, 2);
    const reads: bigint[] = [];
    const handled: number[] = [];
    let failures = 1;
    const { subscription, errors } = subscribe(
      async (after) => {
        reads.push(after);
        if (after === 2n && failures-- > 0) throw new Error('connection lost');
        return page(after);
      },
      async (e) => {
        handled.push(Number(e.position));
      },
    );
    for (let i = 0; i < 100 && handled.length < 4; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    await subscription.stop();

    expect(handled).toEqual([1, 2, 3, 4]);
    expect(reads.slice(0, 3)).toEqual([0n, 2n, 2n]);
    expect(errors).toEqual([]);
  });

  it('ends with the handler’s error, leaving the read ahead unreported', async () => {
    const page = pagesOf(10, 2);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { subscription, errors } = subscribe(
        async (after) => {
          if (after > 0n) throw new Error('read ahead failed');
          return page(after);
        },
        async () => {
          throw new Error('handler failed');
        },
      );
      for (let i = 0; i < 10 && errors.length === 0; i++) await settle();
      await subscription.stop();
      await settle();
      expect(errors.map(String)).toEqual(['Error: handler failed']);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
