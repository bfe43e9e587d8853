import { RefusalBudget, RefusalVerdict } from './refusal-budget';

const WINDOW = 60_000;

function budget(recorded = 3, anonymous = 5, maxPendingKeys?: number) {
  let now = 1_000_000;
  const b = new RefusalBudget(
    { recordedPerWindow: recorded, anonymousPerWindow: anonymous, windowMs: WINDOW, maxPendingKeys },
    () => now,
  );
  return { b, advance: (ms: number) => (now += ms) };
}

async function judgeMany(b: RefusalBudget, n: number, address: string | null, actor: string | null = null) {
  const verdicts: RefusalVerdict['kind'][] = [];
  for (let i = 0; i < n; i++) verdicts.push((await b.judge({ address, actor, code: 'UNAUTHORIZED' })).kind);
  return verdicts;
}

describe('refusal budget', () => {
  it('records the first refusals of an address one by one, then only counts them', async () => {
    const { b } = budget(3, 100);
    expect(await judgeMany(b, 5, '192.0.2.1')).toEqual(['record', 'record', 'record', 'count', 'count']);
  });

  it('answers anonymous refusals past the higher budget with a retry time and no record', async () => {
    const { b } = budget(2, 4);
    const verdicts = await judgeMany(b, 6, '192.0.2.1');
    expect(verdicts).toEqual(['record', 'record', 'count', 'count', 'reject', 'reject']);
    const last = await b.judge({ address: '192.0.2.1', actor: null, code: 'UNAUTHORIZED' });
    expect(last).toEqual({ kind: 'reject', retryAfterSeconds: expect.any(Number) });
    expect((last as { retryAfterSeconds: number }).retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it('never answers 429 to a verified actor, but bounds what it records per actor', async () => {
    const { b } = budget(2, 1);
    expect(await judgeMany(b, 4, null, 'mallory')).toEqual(['record', 'record', 'count', 'count']);
  });

  it('bounds a known actor by its own budget across addresses', async () => {
    const { b } = budget(2, 100);
    const kinds = [
      (await b.judge({ address: '192.0.2.1', actor: 'mallory', code: 'FORBIDDEN' })).kind,
      (await b.judge({ address: '192.0.2.2', actor: 'mallory', code: 'FORBIDDEN' })).kind,
      (await b.judge({ address: '192.0.2.3', actor: 'mallory', code: 'FORBIDDEN' })).kind,
    ];
    expect(kinds).toEqual(['record', 'record', 'count']);
    expect(b.takeSummaries()).toEqual([
      expect.objectContaining({ actor: 'mallory', client_address: null, suppressed: 1, codes: { FORBIDDEN: 1 } }),
    ]);
  });

  it('keeps one address’s flood from using up another address’s budget', async () => {
    const { b } = budget(2, 100);
    await judgeMany(b, 50, '192.0.2.1');
    expect(await judgeMany(b, 2, '192.0.2.2')).toEqual(['record', 'record']);
  });

  it('summarises what it counted once per address, with the rate-limited share and the codes, and then forgets it', async () => {
    const { b, advance } = budget(2, 6);
    await judgeMany(b, 10, '192.0.2.1');
    advance(5_000);
    const [summary, ...others] = b.takeSummaries();
    expect(others).toEqual([]);
    expect(summary).toEqual({
      client_address: '192.0.2.1',
      actor: null,
      window_start: new Date(1_000_000).toISOString(),
      window_end: new Date(1_005_000).toISOString(),
      suppressed: 8,
      rate_limited: 4,
      codes: { UNAUTHORIZED: 8 },
    });
    expect(b.takeSummaries()).toEqual([]);
  });

  it('accounts for every refusal: recorded plus summarised equals refused', async () => {
    const { b } = budget(7, 40);
    const verdicts = await judgeMany(b, 1_000, '192.0.2.1');
    const recorded = verdicts.filter((v) => v === 'record').length;
    const summarised = b.takeSummaries().reduce((sum, s) => sum + s.suppressed, 0);
    expect(recorded).toBe(7);
    expect(recorded + summarised).toBe(1_000);
  });

  it('records again once the window has passed', async () => {
    const { b, advance } = budget(2, 100);
    await judgeMany(b, 5, '192.0.2.1');
    advance(2 * WINDOW);
    expect(await judgeMany(b, 3, '192.0.2.1')).toEqual(['record', 'record', 'count']);
  });

  it('holds a bounded number of pending summaries, the rest counted together', async () => {
    const { b } = budget(0, 100, 3);
    for (let i = 0; i < 10; i++) await b.judge({ address: `192.0.2.${i}`, actor: null, code: 'UNAUTHORIZED' });
    const summaries = b.takeSummaries();
    expect(summaries).toHaveLength(4);
    expect(summaries.find((s) => s.client_address === null && s.actor === null)?.suppressed).toBe(7);
    expect(summaries.reduce((sum, s) => sum + s.suppressed, 0)).toBe(10);
  });
});
