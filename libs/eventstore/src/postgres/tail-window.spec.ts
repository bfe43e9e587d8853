import { TailRead, TailWindow } from './tail-window';

/** A table of events at the given positions; `safeTo` is how far a read may go (the rest is in flight). */
class FakeTable {
  positions: bigint[] = [];
  safeTo: bigint | null = null;
  reads: bigint[] = [];
  failNext: Error | undefined;

  add(...positions: number[]): void {
    this.positions.push(...positions.map(BigInt));
  }

  async read(after: bigint, pageSize: number): Promise<TailRead<bigint>> {
    this.reads.push(after);
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = undefined;
      throw err;
    }
    const items = this.positions
      .filter((p) => p > after && (this.safeTo === null || p <= this.safeTo))
      .slice(0, pageSize);
    return {
      items,
      scannedTo: items.at(-1),
      full: items.length === pageSize,
      head: this.positions.at(-1) ?? -1n,
    };
  }
}

describe('TailWindow', () => {
  let table: FakeTable;
  let wakeups: number;
  let window: TailWindow<bigint>;

  beforeEach(() => {
    table = new FakeTable();
    wakeups = 1;
    window = new TailWindow<bigint>({
      read: (after) => table.read(after, 3),
      positionOf: (p) => p,
      wakeups: () => wakeups,
      pageSize: 3,
      maxItems: 6,
    });
  });

  it('answers nothing before a subscription reached the tail on its own', async () => {
    table.add(1, 2);

    expect(await window.page(0n, 1)).toBeNull();
    expect(table.reads).toEqual([]);
  });

  it('serves subscriptions at different positions from one read of the tail', async () => {
    window.reachedTail(10n, 1);
    table.add(11, 12);
    wakeups = 2;

    const pages = await Promise.all([window.page(10n, 2), window.page(10n, 2)]);
    const behind = await window.page(10n, 2);
    const further = await window.page(11n, 2);

    expect(table.reads).toEqual([10n]);
    expect(pages.map((p) => p?.items)).toEqual([
      [11n, 12n],
      [11n, 12n],
    ]);
    expect(behind).toEqual({ items: [11n, 12n], scannedTo: 12n, full: false, blocked: false });
    expect(further).toEqual({ items: [12n], scannedTo: 12n, full: false, blocked: false });
  });

  it('reads again for a subscription at its end, so a poll still reaches the database', async () => {
    window.reachedTail(10n, 1);
    table.add(11);
    await window.page(10n, 1);

    table.add(12);
    const polled = await window.page(11n, 1);

    expect(table.reads).toEqual([10n, 11n]);
    expect(polled?.items).toEqual([12n]);
  });

  it('sends a subscription back at once when a wake-up came after the read that filled the window', async () => {
    window.reachedTail(10n, 1);
    table.add(11, 12);
    await window.page(10n, 1);

    // Woken again (a commit after the read) with rows still unread in the window: they come now, and the
    // page says there is more, since the subscription's wake-up signal is spent.
    wakeups = 2;
    const page = await window.page(10n, 2);

    expect(page).toMatchObject({ items: [11n, 12n], full: true });
    expect(table.reads).toEqual([10n]);
  });

  it('gives a page at a time and says more is readable while the window or the table holds more', async () => {
    window.reachedTail(0n, 1);
    table.add(1, 2, 3, 4, 5);

    const first = await window.page(0n, 1);
    const second = await window.page(3n, 1);

    expect(first).toEqual({ items: [1n, 2n, 3n], scannedTo: 3n, full: true, blocked: false });
    expect(second).toEqual({ items: [4n, 5n], scannedTo: 5n, full: false, blocked: false });
    expect(table.reads).toEqual([0n, 3n]);
  });

  it('says blocked when committed events lie beyond what is safe to read', async () => {
    window.reachedTail(0n, 1);
    table.add(1, 2);
    table.safeTo = 1n;

    const blocked = await window.page(0n, 1);
    const retried = await window.page(1n, 1);

    expect(blocked).toEqual({ items: [1n], scannedTo: 1n, full: false, blocked: true });
    expect(retried).toEqual({ items: [], scannedTo: 1n, full: false, blocked: true });
    table.safeTo = null;
    expect(await window.page(1n, 1)).toEqual({ items: [2n], scannedTo: 2n, full: false, blocked: false });
  });

  it('keeps the newest events only: a subscription behind them reads on its own', async () => {
    window.reachedTail(0n, 1);
    table.add(1, 2, 3, 4, 5, 6, 7, 8, 9);
    for (const after of [0n, 3n, 6n]) await window.page(after, 1);

    expect(await window.page(2n, 1)).toBeNull();
    expect(await window.page(3n, 1)).toMatchObject({ items: [4n, 5n, 6n] });
  });

  it('starts again where a subscription stands when one read cannot reach it', async () => {
    window.reachedTail(0n, 1);
    table.add(1, 2, 3, 4, 5, 6, 7, 8);

    expect(await window.page(8n, 1)).toBeNull();
    table.add(9);
    expect(await window.page(8n, 1)).toMatchObject({ items: [9n] });
    expect(await window.page(2n, 1)).toBeNull();
    expect(table.reads).toEqual([0n, 8n]);
  });

  it('fails the subscriptions waiting on a failed read, and reads again for the next ask', async () => {
    window.reachedTail(0n, 1);
    table.add(1);
    table.failNext = new Error('connection reset');

    await expect(Promise.all([window.page(0n, 1), window.page(0n, 1)])).rejects.toThrow('connection reset');
    expect(await window.page(0n, 1)).toMatchObject({ items: [1n] });
    expect(table.reads).toEqual([0n, 0n]);
  });
});
