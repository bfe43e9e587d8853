import { createHash } from 'node:crypto';
import type { QueryConfig } from 'pg';

/**
 * A statement PostgreSQL parses and plans once per connection, then only binds and executes. A hot
 * statement on these machines spent as long in the planner as in execution (pg_stat_statements over a
 * 1,000-job burst: a job's stream read 0.11 ms planning, 0.04 ms executing; bench/README.md).
 *
 * Named by a digest of its text: one text, one name, on every connection, whatever schema or table it
 * names (node-postgres refuses a name reused for another text). Only for statements whose text is fixed
 * and whose values travel as parameters; after five runs PostgreSQL keeps a generic plan only when it
 * costs no more than the custom ones it made.
 */
export function prepared(text: string, values: unknown[]): QueryConfig {
  return { name: preparedName(text), text, values };
}

/** The name `prepared` gives `text`, for a caller that keeps it rather than hash the text per call. */
export function preparedName(text: string): string {
  return `hcp_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
}
