import { formatDuration, parseDuration } from './duration';

describe('durations', () => {
  it.each([
    ['10m', 600_000],
    ['30s', 30_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['90', 90_000],
    ['1.5s', 1_500],
  ])('reads %s', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '10x', 'm', '0s', '-1s', '10m junk'])('refuses %p', (text) =>
    expect(() => parseDuration(text)).toThrow(/duration|longer than 0/),
  );

  it('writes seconds with a tenth, then minutes and hours', () => {
    expect([4_200, 59_940, 65_000, 3_720_000].map(formatDuration)).toEqual(['4.2s', '59.9s', '1m05s', '1h02m']);
  });
});
