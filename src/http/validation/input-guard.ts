import type { FastifyRequest } from 'fastify';
import { HcpError, invalidRequest } from '@hcp/domain';
import { pathOf } from '../edge/http-types';

const MAX_DEPTH = 32;
/** NUL and unpaired UTF-16 surrogates: PostgreSQL cannot store them in text or jsonb. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what this guard exists to refuse
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Refuses, before any handler, input no field of HCP accepts and that would otherwise fail deep in the
 * stack: characters PostgreSQL cannot store (in the path, the query or the body) and bodies nested
 * deeper than any HCP document (validators recurse and would overflow the stack).
 */
export function inputGuard(req: FastifyRequest): HcpError | undefined {
  let path: string;
  try {
    path = decodeURIComponent(pathOf(req));
  } catch {
    return invalidRequest('the path is not valid URL encoding');
  }
  const problem = UNSTORABLE.test(path)
    ? 'the path holds characters HCP does not accept'
    : (inspect(req.query, 0, 'query') ?? inspect(req.body, 0, 'body'));
  return problem ? invalidRequest(problem) : undefined;
}

function inspect(value: unknown, depth: number, where: string): string | null {
  if (depth > MAX_DEPTH) return `the ${where} is nested deeper than ${MAX_DEPTH} levels`;
  if (typeof value === 'string')
    return UNSTORABLE.test(value)
      ? `the ${where} holds characters HCP does not accept (NUL or unpaired surrogates)`
      : null;
  if (value === null || typeof value !== 'object') return null;
  for (const [key, child] of Object.entries(value)) {
    if (UNSTORABLE.test(key)) return `the ${where} holds characters HCP does not accept (NUL or unpaired surrogates)`;
    const problem = inspect(child, depth + 1, where);
    if (problem) return problem;
  }
  return null;
}
