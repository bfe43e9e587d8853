/**
 * A stream's category is its id up to and including the first `-` (`vm-`, `job-`, `quota-`): what a
 * commit notification names, so a subscription wakes only for commits to streams it reads.
 */
export function categoryOf(streamId: string): string {
  const dash = streamId.indexOf('-');
  return dash < 0 ? streamId : streamId.slice(0, dash + 1);
}

/** Notification payloads stay far below PostgreSQL's 8,000-byte limit; past this, name nothing (wake all). */
const MAX_PAYLOAD = 4_000;

export function encodeCategories(categories: Iterable<string>): string {
  const payload = [...categories].join(',');
  return payload.length > MAX_PAYLOAD ? '' : payload;
}

/** The categories a payload names; null means "any" (an empty payload, or a wake-up not from a commit). */
export function decodeCategories(payload: string | undefined): string[] | null {
  return payload ? payload.split(',') : null;
}

/**
 * Whether a commit to these categories may concern a subscription reading streams with these prefixes
 * (null: all streams). Errs towards waking: a needless wake-up costs a read, a missed one a poll interval.
 */
export function concerns(categories: string[] | null, prefixes: readonly string[] | null): boolean {
  if (categories === null || prefixes === null) return true;
  return categories.some((c) => prefixes.some((p) => p.startsWith(c) || c.startsWith(p)));
}
