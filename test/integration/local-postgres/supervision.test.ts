import { Pool } from 'pg';
import {
  cleanUp,
  freePort,
  postmasterPid,
  query,
  recorder,
  serverProcesses,
  sigkill,
  start,
  startInChild,
  tempDataDir,
  waitFor,
} from './local-postgres.fixtures';

// Real postgres processes killed with SIGKILL; the supervisor checks the server every second and crash
// recovery replays the WAL before the restarted server answers.
jest.setTimeout(120_000);

afterAll(cleanUp);

/** A pool as HCP holds one: a server that goes away must not crash the test process. */
function poolOn(connectionString: string): Pool {
  const pool = new Pool({ connectionString, max: 2, connectionTimeoutMillis: 2000 });
  pool.on('error', () => undefined);
  return pool;
}

async function answers(pool: Pool): Promise<boolean> {
  return pool.query('SELECT 1').then(
    () => true,
    () => false,
  );
}

describe('a supervised embedded PostgreSQL', () => {
  it('comes back on the same port after its postmaster is SIGKILLed, and a pool reconnects', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const rec = recorder();
    const server = await start(dataDir, port, rec, { supervise: true });
    const pool = poolOn(server.connectionString);
    try {
      await pool.query('CREATE TABLE vms (id text PRIMARY KEY)');
      await pool.query("INSERT INTO vms VALUES ('vm-1')");
      const killed = (await postmasterPid(dataDir))!;

      process.kill(killed, 'SIGKILL');
      await waitFor(async () => !(await serverProcesses(dataDir)).includes(killed));
      // The restarted server may answer a moment before its supervisor has counted the restart.
      await waitFor(async () => server.restarts >= 1 && (await answers(pool)), 60_000);

      const restarted = await postmasterPid(dataDir);
      expect(restarted).not.toBe(killed);
      expect((await pool.query('SELECT id FROM vms')).rows).toEqual([{ id: 'vm-1' }]);
      expect((await pool.query('SHOW port')).rows).toEqual([{ port: String(port) }]);
      expect(server.restarts).toBe(1);
      expect(rec.messages.join('\n')).toContain(`WARN embedded PostgreSQL (pid ${killed}) died; restarting it`);
      expect(rec.messages.join('\n')).toContain(`restarted on port ${port} (pid ${restarted}, restart 1)`);
    } finally {
      await pool.end();
    }
  });

  it('restarts a server it took over from a killed process, which is not its child', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const { child } = await startInChild(dataDir, port);
    await sigkill(child);
    const leftover = (await postmasterPid(dataDir))!;
    const rec = recorder();
    const server = await start(dataDir, port, rec, { supervise: true });
    expect(rec.messages.join('\n')).toContain(`reusing the server left running on port ${port} (pid ${leftover})`);
    const pool = poolOn(server.connectionString);
    try {
      process.kill(leftover, 'SIGKILL');
      await waitFor(async () => !(await serverProcesses(dataDir)).includes(leftover));
      await waitFor(async () => server.restarts >= 1 && (await answers(pool)), 60_000);
      expect(server.restarts).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it('lets two processes supervising one data folder agree on one restarted server', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const first = await start(dataDir, port, recorder(), { supervise: true });
    const second = await start(dataDir, port, recorder(), { supervise: true });
    expect(second.reused).toBe(true);
    const pool = poolOn(first.connectionString);
    try {
      const killed = (await postmasterPid(dataDir))!;
      process.kill(killed, 'SIGKILL');
      await waitFor(async () => first.restarts >= 1 && second.restarts >= 1, 60_000);
      await waitFor(() => answers(pool), 60_000);
      const restarted = await postmasterPid(dataDir);

      // Two checks later neither supervisor has taken the other's server for dead.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect(await postmasterPid(dataDir)).toBe(restarted);
      expect([first.restarts, second.restarts]).toEqual([1, 1]);
    } finally {
      await pool.end();
    }
  });

  it('stays stopped once stopped', async () => {
    const dataDir = await tempDataDir();
    const server = await start(dataDir, await freePort(), recorder(), { supervise: true });
    await server.stop();
    expect(await serverProcesses(dataDir)).toEqual([]);

    // Longer than the supervisor's check interval: a supervisor still running would have restarted it.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(await serverProcesses(dataDir)).toEqual([]);
    expect(server.restarts).toBe(0);
    await expect(query(server.connectionString, 'SELECT 1')).rejects.toThrow();
  });
});
