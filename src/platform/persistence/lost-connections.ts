import type { Pool, PoolClient } from 'pg';

/**
 * Gives every client of a pool an 'error' listener for the time it is checked out. pg-pool listens only
 * to idle clients; a connection the server drops mid-query (restart, failover, pg_terminate_backend)
 * then emits 'error' on a checked-out client, and an 'error' event nobody listens to ends the process.
 * The failed query rejects anyway, and the pool discards the client once its socket has ended (released
 * before that, it may fail one more query): the listener only has to exist, and says what happened.
 */
export function survivePoolConnectionLoss(pool: Pool, onLost: (err: Error) => void): void {
  const guarded = new WeakSet<PoolClient>();
  pool.on('acquire', (client) => {
    if (guarded.has(client)) return;
    guarded.add(client);
    client.on('error', onLost);
  });
}

/** SQLSTATEs of a server that is going away or cannot take a session: admin/crash shutdown, cannot connect now, too many connections. */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH']);
/** What pg and pg-pool throw without a code when the socket ends or the pool waits too long. */
const PG_MESSAGES =
  /Connection terminated unexpectedly|Connection terminated due to connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable/i;

/**
 * Whether an error means PostgreSQL could not be reached (down, restarting, refusing sessions) rather
 * than that the work itself was wrong. Looks through TypeORM's QueryFailedError (driverError), the
 * standard `cause` and AggregateError (a refused connect to several addresses), a few levels deep.
 */
export function isConnectionFailure(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  const { code, message, driverError, cause, errors } = err as {
    code?: unknown;
    message?: unknown;
    driverError?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === 'string') {
    if (UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code) || SOCKET_CODES.has(code)) return true;
  }
  if (typeof message === 'string' && PG_MESSAGES.test(message)) return true;
  if (Array.isArray(errors) && errors.some((e) => isConnectionFailure(e, depth + 1))) return true;
  return isConnectionFailure(driverError, depth + 1) || isConnectionFailure(cause, depth + 1);
}
