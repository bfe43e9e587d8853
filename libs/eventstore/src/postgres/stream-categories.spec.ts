import { categoryOf, concerns, decodeCategories, encodeCategories } from './stream-categories';

describe('stream categories of commit notifications', () => {
  it('names a stream by its id up to the first dash', () => {
    expect(categoryOf('vm-0b7e1c2a-0000-4000-8000-000000000000')).toBe('vm-');
    expect(categoryOf('quota-acme-prod')).toBe('quota-');
    expect(categoryOf('ledger')).toBe('ledger');
  });

  it('round-trips a set of categories, and names nothing (wake all) when the list is too long', () => {
    expect(decodeCategories(encodeCategories(new Set(['vm-', 'job-'])))).toEqual(['vm-', 'job-']);
    expect(decodeCategories(encodeCategories(Array.from({ length: 2_000 }, (_, i) => `c${i}-`)))).toBeNull();
    expect(decodeCategories('')).toBeNull();
    expect(decodeCategories(undefined)).toBeNull();
  });

  it('wakes a subscription for commits to its streams only, and always when in doubt', () => {
    expect(concerns(['vm-'], ['vm-'])).toBe(true);
    expect(concerns(['job-', 'quota-'], ['vm-', 'quota-'])).toBe(true);
    expect(concerns(['job-'], ['vm-'])).toBe(false);
    // A prefix longer than a category (one stream, say) still wakes on its category.
    expect(concerns(['vm-'], ['vm-0b7e1c2a'])).toBe(true);
    expect(concerns(['ledger'], ['ledger-2026'])).toBe(true);
    expect(concerns(null, ['vm-'])).toBe(true);
    expect(concerns(['job-'], null)).toBe(true);
  });
});
