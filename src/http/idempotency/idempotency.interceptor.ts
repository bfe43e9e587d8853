import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { HttpReply as Response, HttpRequest as Request } from '../edge/http-types';
import { headerOf, pathOf, routePatternOf } from '../edge/http-types';
import { createHash } from 'node:crypto';
import { from, Observable, of, throwError } from 'rxjs';
import { catchError, mergeMap } from 'rxjs/operators';
import { ROUTE_POLICIES, routeKey } from '@hcp/auth';
import { conflict, invalidField } from '@hcp/domain';
import { Claim, IdempotencyStore } from './idempotency-store';

const VALID_KEY = /^[\x20-\x7e]{1,255}$/;
/** Scope of keys on ops routes, which have no project. */
const OPS_SCOPE = '(ops)';
const WAIT_FOR_FIRST_MS = 15_000;

export type IdempotentRequest = Request & { idempotencyKey?: string };

/**
 * `Idempotency-Key` on job-starting routes (API.md): the first request with a key runs; any later one
 * with the same key and body gets the first answer again (same ids, same status), one with another body
 * gets CONFLICT. Concurrent requests with one key wait for the first to finish. Answers are kept 24 h.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(private readonly store: IdempotencyStore) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<IdempotentRequest>();
    const res = context.switchToHttp().getResponse<Response>();
    const policy = ROUTE_POLICIES[routeKey(req.method, routePatternOf(req))];
    const key = headerOf(req, 'idempotency-key');
    if (key === undefined || !policy || !('starts_job' in policy) || !policy.starts_job) return next.handle();
    if (!VALID_KEY.test(key))
      return throwError(() =>
        invalidField('Idempotency-Key', 'Idempotency-Key must be 1 to 255 printable ASCII characters'),
      );

    const scope = typeof req.params.project_id === 'string' ? req.params.project_id : OPS_SCOPE;
    const hash = requestHash(req);
    return from(this.claim(scope, key, hash)).pipe(
      mergeMap((claim) => {
        if (claim.kind === 'completed') {
          res.status(claim.answer.status);
          if (claim.answer.location) res.header('Location', claim.answer.location);
          res.header('Idempotent-Replayed', 'true');
          return of(claim.answer.body);
        }
        req.idempotencyKey = key;
        return next.handle().pipe(
          mergeMap((body) =>
            from(
              this.store
                .complete(scope, key, {
                  status: res.statusCode,
                  body,
                  location: (res.getHeader('Location') as string | undefined) ?? null,
                })
                .then(() => body),
            ),
          ),
          // The request's own error is the answer; a release that fails too (the database is down) leaves
          // the claim to be taken over once abandoned, instead of turning the answer into its error.
          catchError((err) =>
            from(this.store.release(scope, key).catch(() => undefined)).pipe(mergeMap(() => throwError(() => err))),
          ),
        );
      }),
    );
  }

  /** Claims the key, waiting while another request with it is still running. */
  private async claim(scope: string, key: string, hash: string): Promise<Claim> {
    const deadline = Date.now() + WAIT_FOR_FIRST_MS;
    for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
      const claim = await this.store.claim(scope, key, hash);
      if (claim.kind !== 'claimed' && claim.requestHash !== hash) {
        throw conflict('this Idempotency-Key was used with a different request', { header: 'Idempotency-Key' });
      }
      if (claim.kind !== 'pending') return claim;
      if (Date.now() > deadline)
        throw conflict('a request with this Idempotency-Key is still in progress; retry later');
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** Method, path and body, with object keys sorted so equal JSON bodies hash equal. */
function requestHash(req: Request): string {
  return createHash('sha256')
    .update(`${req.method} ${pathOf(req)}\n${canonicalJson(req.body ?? null)}`)
    .digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
