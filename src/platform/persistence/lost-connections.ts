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
