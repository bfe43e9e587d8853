import { CheckedEventIds } from './checked-event-ids';

describe('CheckedEventIds', () => {
  it('remembers the ids it was given', () => {
    const checked = new CheckedEventIds(10);
    checked.add('a');
    checked.add('b');

    expect(checked.has('a')).toBe(true);
    expect(checked.has('b')).toBe(true);
    expect(checked.has('c')).toBe(false);
  });

  it('keeps at least the newest half of its capacity and never more than its capacity', () => {
    const checked = new CheckedEventIds(10);
    for (let i = 0; i < 1_000; i++) checked.add(`id-${i}`);

    const kept = Array.from({ length: 1_000 }, (_, i) => `id-${i}`).filter((id) => checked.has(id));
    expect(kept.length).toBeLessThanOrEqual(10);
    expect(kept.length).toBeGreaterThanOrEqual(5);
    // The ones kept are the newest.
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => `id-${1_000 - kept.length + i}`));
  });

  it('forgets the oldest ids first', () => {
    const checked = new CheckedEventIds(4);
    for (const id of ['a', 'b', 'c', 'd', 'e']) checked.add(id);

    expect(['a', 'b'].some((id) => checked.has(id))).toBe(false);
    expect(['c', 'd', 'e'].every((id) => checked.has(id))).toBe(true);
  });

  it('does not count an id given twice as two', () => {
    const checked = new CheckedEventIds(4);
    for (const id of ['a', 'b', 'a', 'a', 'c']) checked.add(id);

    expect(['a', 'b', 'c'].every((id) => checked.has(id))).toBe(true);
  });
});
