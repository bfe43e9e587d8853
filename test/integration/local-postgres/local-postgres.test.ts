import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import {
  cleanUp,
  freePort,
  postmasterPid,
  query,
  recorder,
  rememberedPort,
  serverProcesses,
  sigkill,
  squat,
  start,
  startInChild,
  tempDataDir,
} from './local-postgres.fixtures';

// Real initdb and postgres processes; a first start takes about a second, a child under ts-node a few more.
// These start the server on a given port (HCP_EMBEDDED_PG_PORT set); port-choice.test.ts covers the default.
jest.setTimeout(120_000);

afterAll(cleanUp);

describe('startEmbeddedPostgres on a given port', () => {
  it('creates a cluster on first start and keeps its data across a stop and a start', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const first = await start(dataDir, port);

    expect(first.connectionString).toMatch(new RegExp(`^postgres://hcp:[^@]+@127\\.0\\.0\\.1:${port}/hcp$`));
    const credentials = await fs.stat(path.join(dataDir, 'postgres.credentials.json'));
    expect(credentials.mode & 0o777).toBe(0o600);
    expect(first.port).toBe(port);
    // A configured port is an override: the data folder keeps no memory of it.
    expect(await rememberedPort(dataDir)).toBeUndefined();
    const [listen] = await query<{ listen_addresses: string }>(first.connectionString, 'SHOW listen_addresses');
    expect(listen?.listen_addresses).toBe('127.0.0.1');

    await query(first.connectionString, 'CREATE TABLE vms (id text PRIMARY KEY, name text NOT NULL)');
    await query(first.connectionString, 'INSERT INTO vms VALUES ($1, $2)', ['vm-1', 'web-1']);
    await first.stop();
    expect(await serverProcesses(dataDir)).toEqual([]);
    await expect(query(first.connectionString, 'SELECT 1')).rejects.toThrow();

    const second = await start(dataDir, port);
    expect(second.connectionString).toBe(first.connectionString);
    expect(await query(second.connectionString, 'SELECT id, name FROM vms')).toEqual([{ id: 'vm-1', name: 'web-1' }]);
    await second.stop();
    await second.stop();
  });

  it('reuses the server a SIGKILLed process left running on the same port', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const { child, connectionString } = await startInChild(dataDir, port);
    await query(connectionString, 'CREATE TABLE jobs (id text PRIMARY KEY)');
    await query(connectionString, "INSERT INTO jobs VALUES ('job-1')");
    const leftover = await postmasterPid(dataDir);

    await sigkill(child);
    // The situation being handled: the server outlives the process that started it.
    expect(await serverProcesses(dataDir)).toContain(leftover);

    const rec = recorder();
    const server = await start(dataDir, port, rec);
    expect(rec.messages.join('\n')).toContain(`reusing the server left running on port ${port} (pid ${leftover})`);
    expect(server.connectionString).toBe(connectionString);
    expect(await query(server.connectionString, 'SELECT id FROM jobs')).toEqual([{ id: 'job-1' }]);

    await server.stop();
    expect(await serverProcesses(dataDir)).toEqual([]);
  });

  it('shuts down a leftover server that listens on another port and starts a new one', async () => {
    const dataDir = await tempDataDir();
    const oldPort = await freePort();
    const { child, connectionString } = await startInChild(dataDir, oldPort);
    await query(connectionString, 'CREATE TABLE jobs (id text PRIMARY KEY)');
    await query(connectionString, "INSERT INTO jobs VALUES ('job-2')");
    const leftover = await postmasterPid(dataDir);
    await sigkill(child);

    let newPort = await freePort();
    while (newPort === oldPort) newPort = await freePort();
    const rec = recorder();
    const server = await start(dataDir, newPort, rec);
    expect(rec.messages.join('\n')).toContain(
      `(pid ${leftover}, port ${oldPort}, ready) does not answer on port ${newPort}; shutting it down`,
    );
    expect(await serverProcesses(dataDir)).not.toContain(leftover);
    expect(await postmasterPid(dataDir)).not.toBe(leftover);
    expect(await query(server.connectionString, 'SELECT id FROM jobs')).toEqual([{ id: 'job-2' }]);
    await expect(query(connectionString, 'SELECT 1')).rejects.toThrow();

    await server.stop();
  });

  it('removes a stale pid file without signalling the live process that now has that pid', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const first = await start(dataDir, port);
    await query(first.connectionString, 'CREATE TABLE t (v int)');
    await first.stop();

    // A pid reused by an unrelated process (this test runner itself): it must survive, the file must go.
    const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
    await fs.writeFile(
      pidFile,
      `${process.pid}\n${path.join(dataDir, 'postgres')}\n0\n${port}\n\n127.0.0.1\n0 0\nready   \n`,
    );
    const rec = recorder();
    const second = await start(dataDir, port, rec);
    expect(rec.messages.join('\n')).toContain(
      `removing the stale ${pidFile} (pid ${process.pid} is no server of this cluster)`,
    );
    expect(await query(second.connectionString, 'SELECT count(*)::int AS n FROM t')).toEqual([{ n: 0 }]);
    await second.stop();

    // A dead pid.
    const gone = spawn(process.execPath, ['-e', '']);
    const deadPid = gone.pid;
    await new Promise((resolve) => gone.once('exit', resolve));
    await fs.writeFile(
      pidFile,
      `${deadPid}\n${path.join(dataDir, 'postgres')}\n0\n${port}\n\n127.0.0.1\n0 0\nready   \n`,
    );
    const third = await start(dataDir, port);
    expect(await query(third.connectionString, 'SELECT count(*)::int AS n FROM t')).toEqual([{ n: 0 }]);
    await third.stop();
  });

  it('says why when the server cannot start, here because its port is taken', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const squatter = await squat(port);
    try {
      await expect(start(dataDir, port)).rejects.toThrow(
        /did not start[\s\S]*could not bind IPv4 address "127\.0\.0\.1": Address already in use/,
      );
    } finally {
      await squatter.close();
    }
    // Nothing was left behind, and the next attempt on a free port succeeds.
    expect(await serverProcesses(dataDir)).toEqual([]);
    await (await start(dataDir, await freePort())).stop();
  });

  it('refuses a cluster whose credentials file was lost rather than inventing a new password', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    await (await start(dataDir, port)).stop();
    await fs.rm(path.join(dataDir, 'postgres.credentials.json'));
    await expect(start(dataDir, port)).rejects.toThrow(/postgres\.credentials\.json is missing/);
  });
});
