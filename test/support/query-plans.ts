import { escapeLiteral } from 'pg';

/** Runs one SQL text on the connection the statement was planned on and returns its rows. */
export type RunSql = (sql: string) => Promise<Array<Record<string, unknown>>>;

/** The text and parameters of a statement as a driver was given it (`pg`'s query config, TypeORM's query). */
export interface CapturedStatement {
  text: string;
  values: readonly unknown[];
}

/**
 * Which of PostgreSQL's plans for a statement would read the whole of `table`: the custom plan made for
 * these very parameters, and the generic plan a prepared statement settles on after five executions.
 * EXPLAIN takes no bind parameters, so they go in as literals, typed by the statement's own casts.
 */
export async function plansScanningWholeTable(
  run: RunSql,
  statement: CapturedStatement,
  table: string,
): Promise<Array<'custom' | 'generic'>> {
  const scanning: Array<'custom' | 'generic'> = [];
  await run(`PREPARE plan_under_test AS ${statement.text}`);
  try {
    for (const mode of ['custom', 'generic'] as const) {
      await run(`SET plan_cache_mode = force_${mode}_plan`);
      const [row] = await run(
        `EXPLAIN (FORMAT JSON) EXECUTE plan_under_test(${statement.values.map(literal).join(', ')})`,
      );
      if (seqScans(row!['QUERY PLAN']).includes(table)) scanning.push(mode);
    }
  } finally {
    await run('DEALLOCATE plan_under_test');
    await run('RESET plan_cache_mode');
  }
  return scanning;
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Array.isArray(value)) return escapeLiteral(`{${value.map((v) => JSON.stringify(String(v))).join(',')}}`);
  return escapeLiteral(String(value));
}

/** The tables a plan (EXPLAIN's JSON, any depth of sub-plans and CTEs) reads by a sequential scan. */
function seqScans(plan: unknown): string[] {
  if (Array.isArray(plan)) return plan.flatMap(seqScans);
  if (plan === null || typeof plan !== 'object') return [];
  const node = plan as Record<string, unknown>;
  const own = node['Node Type'] === 'Seq Scan' ? [String(node['Relation Name'])] : [];
  return [...own, ...Object.values(node).flatMap(seqScans)];
}
