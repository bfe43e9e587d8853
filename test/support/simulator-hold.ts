import { Client } from 'pg';

/**
 * Runs `body` while the simulator's row of one VM is locked (SELECT ... FOR UPDATE in an open
 * transaction), then releases it. The simulator's writes to that VM (its delete, power changes, create
 * phases) wait for the lock; its reads do not. So an operation on that VM started inside `body` stays in
 * progress until `body` is done, and the in-between state a test asserts on (`deleting`, say) holds
 * however slow or fast the machine is; no other VM is affected. After the release the held operation
 * finishes normally. Keep holds short: the lock gives the holding transaction an id, and PostgreSQL
 * event-store readers on the server (projections) wait below the oldest open one until the release.
 */
export async function whileSimulatorHoldsVm<T>(databaseUrl: string, hcpId: string, body: () => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('BEGIN');
    const { rowCount } = await client.query('SELECT 1 FROM simulator.vms WHERE hcp_id = $1 FOR UPDATE', [hcpId]);
    if (rowCount !== 1) throw new Error(`the simulator has no VM ${hcpId} to hold`);
    return await body();
  } finally {
    // Ending the session rolls the transaction back and releases the lock.
    await client.end();
  }
}
