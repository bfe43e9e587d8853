import { HcpError } from '../errors';

/**
 * Job facts: what an attempt wrote down before acting on a provider (the VMID a clone is about to take,
 * say), so a later attempt in any process finds it. Provider handles only: a fact is internal (never in
 * the job answer) and must never carry a secret, so keys that name one are refused, and a value is plain
 * JSON of bounded size and depth.
 */
export const JOB_FACT_KEY_PATTERN = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$/;
export const JOB_FACT_KEY_MAX = 64;
/** Bytes of a fact's value as JSON. */
export const JOB_FACT_VALUE_MAX = 1024;
/** Facts one job may hold (distinct keys). */
export const JOB_FACTS_MAX = 32;
const JOB_FACT_DEPTH_MAX = 4;
const UTF8 = new TextEncoder();
const SECRET_WORDS = /(secret|password|passwd|token|ticket|credential|private)/i;

export type JobFactValue = null | boolean | number | string | JobFactValue[] | { [key: string]: JobFactValue };

/** Why `key` and `value` cannot be a fact, or null when they can. */
export function jobFactProblem(key: string, value: unknown): string | null {
  if (key.length > JOB_FACT_KEY_MAX || !JOB_FACT_KEY_PATTERN.test(key))
    return `fact key must match ${JOB_FACT_KEY_PATTERN} and have at most ${JOB_FACT_KEY_MAX} characters`;
  if (SECRET_WORDS.test(key)) return 'a fact key may not name a secret';
  const shape = jsonShapeProblem(value, 0);
  if (shape) return shape;
  if (UTF8.encode(JSON.stringify(value)).length > JOB_FACT_VALUE_MAX)
    return `fact value is over ${JOB_FACT_VALUE_MAX} bytes as JSON`;
  return null;
}

/** Refuses a fact a driver should not have asked for: a bug of the caller, so not retryable. */
export function checkJobFact(key: string, value: unknown): asserts value is JobFactValue {
  const problem = jobFactProblem(key, value);
  if (problem)
    throw new HcpError('INTERNAL_ERROR', `job fact ${JSON.stringify(key.slice(0, 80))}: ${problem}`, undefined, false);
}

function jsonShapeProblem(value: unknown, depth: number): string | null {
  if (depth > JOB_FACT_DEPTH_MAX) return `fact value is nested deeper than ${JOB_FACT_DEPTH_MAX}`;
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : 'fact value has a number that is not finite';
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = jsonShapeProblem(item, depth + 1);
      if (problem) return problem;
    }
    return null;
  }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [k, item] of Object.entries(value)) {
      if (SECRET_WORDS.test(k)) return 'a fact value may not hold a field that names a secret';
      const problem = jsonShapeProblem(item, depth + 1);
      if (problem) return problem;
    }
    return null;
  }
  return 'fact value is not plain JSON';
}

/** Whether two fact values are the same JSON (object key order aside). */
export function sameJobFact(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}
