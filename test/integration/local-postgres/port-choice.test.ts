import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import {
  cleanUp,
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

// With no port given (HCP_EMBEDDED_PG_PORT empty, the default) each data folder has a port of its own.
jest.setTimeout(120_000);

afterAll(cleanUp);

const LOOPBACK_URL = /^postgres:\/\/hcp:[^@]+@127\.0\.0\.1:(\d+)\/hcp$/;

async function servedDataDirectory(connectionString: string): Promise<string> {
  const [row] = await query<{ data_directory: string }>(connectionString, 'SHOW data_directory');
  return fs.realpath(row!.data_directory);
}

describe('startEmbeddedPostgres with no port given', () => {
  it('starts two servers with different data folders side by side', async () => {
    const [dirA, dirB] = [await tempDataDir(), await tempDataDir()];
    const [a, b] = await Promise.all([start(dirA, undefined), start(dirB, undefined)]);

    expect(a.port).not.toBe(b.port);
    expect(a.connectionString).toMatch(LOOPBACK_URL);
    expect(Number(LOOPBACK_URL.exec(a.connectionString)?.[1])).toBe(a.port);
    expect(Number(LOOPBACK_URL.exec(b.connectionString)?.[1])).toBe(b.port);
    expect(await rememberedPort(dirA)).toBe(a.port);
    expect(await rememberedPort(dirB)).toBe(b.port);
    // Each answers for its own cluster, at the same time.
    const [servedA, servedB] = await Promise.all([
      servedDataDirectory(a.connectionString),
      servedDataDirectory(b.connectionString),
    ]);
    expect(servedA).toBe(path.join(dirA, 'postgres'));
    expect(servedB).toBe(path.join(dirB, 'postgres'));

    await Promise.all([a.stop(), b.stop()]);
    expect(await serverProcesses(dirA)).toEqual([]);
    expect(await serverProcesses(dirB)).toEqual([]);
  });

  it('keeps the data folder on its port across a stop and a start', async () => {
    const dataDir = await tempDataDir();
    const rec = recorder();
    const first = await start(dataDir, undefined, rec);
    expect(rec.messages.join('\n')).toContain(`chose port ${first.port} for ${dataDir}`);
    await query(first.connectionString, 'CREATE TABLE vms (id text PRIMARY KEY)');
    await query(first.connectionString, "INSERT INTO vms VALUES ('vm-1')");
    await first.stop();
    expect(await serverProcesses(dataDir)).toEqual([]);

    const again = recorder();
    const second = await start(dataDir, undefined, again);
    expect(second.port).toBe(first.port);
    expect(second.connectionString).toBe(first.connectionString);
    expect(again.messages.join('\n')).not.toContain('chose port');
    expect(await query(second.connectionString, 'SELECT id FROM vms')).toEqual([{ id: 'vm-1' }]);
    await second.stop();
  });

  it("reuses the server a SIGKILLed process left running on the data folder's port", async () => {
    const dataDir = await tempDataDir();
    const { child, connectionString } = await startInChild(dataDir, undefined);
    const port = await rememberedPort(dataDir);
    expect(connectionString).toContain(`@127.0.0.1:${port}/`);
    await query(connectionString, 'CREATE TABLE jobs (id text PRIMARY KEY)');
    await query(connectionString, "INSERT INTO jobs VALUES ('job-1')");
    const leftover = await postmasterPid(dataDir);
    await sigkill(child);
    expect(await serverProcesses(dataDir)).toContain(leftover);

    const rec = recorder();
    const server = await start(dataDir, undefined, rec);
    expect(rec.messages.join('\n')).toContain(`reusing the server left running on port ${port} (pid ${leftover})`);
    expect(server.connectionString).toBe(connectionString);
    expect(await query(server.connectionString, 'SELECT id FROM jobs')).toEqual([{ id: 'job-1' }]);
    await server.stop();
    expect(await serverProcesses(dataDir)).toEqual([]);
  });

  it('moves to another free port, and remembers it, when the remembered one has been taken', async () => {
    const dataDir = await tempDataDir();
    const first = await start(dataDir, undefined);
    await query(first.connectionString, 'CREATE TABLE t (v int)');
    await first.stop();

    const squatter = await squat(first.port);
    try {
      const rec = recorder();
      const second = await start(dataDir, undefined, rec);
      expect(second.port).not.toBe(first.port);
      expect(rec.messages.join('\n')).toContain(
        `WARN embedded PostgreSQL: port ${first.port}, remembered for ${dataDir}, is taken by another program; using port ${second.port}`,
      );
      expect(await rememberedPort(dataDir)).toBe(second.port);
      expect(await query(second.connectionString, 'SELECT count(*)::int AS n FROM t')).toEqual([{ n: 0 }]);
      await second.stop();
    } finally {
      await squatter.close();
    }

    // The new port is the folder's port from now on, even once the old one is free again.
    const third = await start(dataDir, undefined);
    expect(third.port).toBe(await rememberedPort(dataDir));
    expect(third.port).not.toBe(first.port);
    await third.stop();
  });

  it('replaces an unreadable port file with a new free port', async () => {
    const dataDir = await tempDataDir();
    await fs.writeFile(path.join(dataDir, 'postgres.port'), 'not a port\n');
    const rec = recorder();
    const server = await start(dataDir, undefined, rec);
    expect(rec.messages.join('\n')).toContain('postgres.port holds no port number ("not a port"); choosing a new port');
    expect(await rememberedPort(dataDir)).toBe(server.port);
    await server.stop();
  });
});
