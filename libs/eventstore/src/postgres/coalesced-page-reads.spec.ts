import { CoalescedPageReads } from './coalesced-page-reads';

describe('CoalescedPageReads', () => {
  let reads: Array<{ after: bigint; prefixes: string[] | null }>;
  let pages: CoalescedPageReads<string>;

  beforeEach(() => {
    reads = [];
    pages = new CoalescedPageReads(async (after, prefixes) => {
      reads.push({ after, prefixes });
      return [`rows after ${after}`];
    });
  });

  it('reads once for the readers of one position woken by one notification, filtered by the union of their prefixes', async () => {
    const answers = await Promise.all([
      pages.read(10n, 1, ['vm-']),
      pages.read(10n, 1, ['job-', 'vm-']),
      pages.read(10n, 1, ['quota-']),
    ]);

    expect(reads).toEqual([{ after: 10n, prefixes: ['vm-', 'job-', 'quota-'] }]);
    expect(answers).toEqual([['rows after 10'], ['rows after 10'], ['rows after 10']]);
  });

  it('reads every stream when one of the readers reads every stream', async () => {
    await Promise.all([pages.read(10n, 1, ['vm-']), pages.read(10n, 1, null), pages.read(10n, 1, ['job-'])]);

    expect(reads).toEqual([{ after: 10n, prefixes: null }]);
  });

  it('never joins a reader woken by a later notification to a read asked for before it', async () => {
    await Promise.all([pages.read(10n, 1, ['vm-']), pages.read(10n, 2, ['vm-'])]);

    expect(reads).toEqual([
      { after: 10n, prefixes: ['vm-'] },
      { after: 10n, prefixes: ['vm-'] },
    ]);
  });

  it('reads separately for readers at different positions', async () => {
    const answers = await Promise.all([pages.read(10n, 1, ['vm-']), pages.read(3n, 1, ['vm-'])]);

    expect(reads.map((r) => r.after).sort()).toEqual([10n, 3n].sort());
    expect(answers).toEqual([['rows after 10'], ['rows after 3']]);
  });

  it('reads again for a reader that asks once the shared read went out', async () => {
    await pages.read(10n, 1, ['vm-']);
    await pages.read(10n, 1, ['vm-']);

    expect(reads).toHaveLength(2);
  });

  it('fails every reader of a read that failed, and the next read is made anew', async () => {
    let fail = true;
    const failing = new CoalescedPageReads<string>(async () => {
      if (fail) throw new Error('connection terminated');
      return ['ok'];
    });

    const answers = await Promise.allSettled([failing.read(1n, 1, ['vm-']), failing.read(1n, 1, ['job-'])]);
    fail = false;

    expect(answers.map((a) => a.status)).toEqual(['rejected', 'rejected']);
    await expect(failing.read(1n, 1, ['vm-'])).resolves.toEqual(['ok']);
  });
});
