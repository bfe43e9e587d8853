import { HcpError } from '@hcp/domain';
import { isConnectionFailure } from '../persistence/lost-connections';

/** Why HCP answered 503: what it waits for. Also the label of hcp_unavailable_answers_total. */
export type UnavailableReason = 'database' | 'event_store' | 'schema' | 'draining';

/** Seconds a client should wait before retrying, per reason: a restart or failover takes seconds. */
export const RETRY_AFTER_SECONDS: Record<UnavailableReason, number> = {
  database: 5,
  event_store: 5,
  schema: 30,
  draining: 2,
};

/**
 * PROVIDER_UNAVAILABLE (docs/API.md's 503) for what HCP itself depends on, not a provider: the answer
 * carries Retry-After, and nothing of the request was done (or what was done is kept, as for a job).
 */
export class UnavailableError extends HcpError {
  readonly retryAfterSeconds: number;

  constructor(
    readonly reason: UnavailableReason,
    message: string,
    details: Record<string, unknown>,
  ) {
    super('PROVIDER_UNAVAILABLE', message, details, true);
    this.retryAfterSeconds = RETRY_AFTER_SECONDS[reason];
  }
}

export const databaseUnavailable = (dependency: 'database' | 'event_store'): UnavailableError =>
  new UnavailableError(
    dependency,
    `HCP's ${dependency === 'database' ? 'database' : 'event store'} is unavailable; retry after the time in Retry-After`,
    { dependency },
  );

export const draining = (): UnavailableError =>
  new UnavailableError('draining', 'this HCP process is shutting down; retry after the time in Retry-After', {
    dependency: 'hcp',
    reason: 'draining',
  });

/** EventStoreDB client errors that mean the server cannot be reached (its `type`), not a refused append. */
const EVENT_STORE_DB_UNAVAILABLE = new Set(['unavailable', 'deadline-exceeded', 'not-leader']);

/**
 * The outage an error stands for, or null when it is an error of the work itself. The one place where a
 * lost or refused connection (PostgreSQL through pg, TypeORM or the event store; EventStoreDB) becomes
 * a 503 instead of a 500.
 */
export function outageOf(err: unknown): UnavailableError | null {
  if (err instanceof UnavailableError) return err;
  if (isConnectionFailure(err)) return databaseUnavailable('database');
  const type = (err as { type?: unknown } | null)?.type;
  if (err instanceof Error && typeof type === 'string' && EVENT_STORE_DB_UNAVAILABLE.has(type))
    return databaseUnavailable('event_store');
  return null;
}
