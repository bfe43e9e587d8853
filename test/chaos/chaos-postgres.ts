import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '@hcp/local-postgres';
import { Client } from 'pg';
import { trackPid, untrackPid } from './children';

/**
 * The run's own PostgreSQL (never the shared one): a cluster in a temporary folder on a fixed port, so
 * the suite can SIGKILL its postmaster and start it again where HCP expects it.
 */
export class ChaosPostgres {
  private server?: EmbeddedPostgres;
  private pid?: number;

  constructor(
    private readonly dataDir: string,
    readonly port: number,
  ) {}

  async start(): Promise<void> {
    const quiet = { log: () => undefined, warn: (m: string) => process.stderr.write(`postgres: ${m}\n`) };
    this.server = await startEmbeddedPostgres({ dataDir: this.dataDir, port: this.port, logger: quiet });
    this.pid = this.postmasterPid();
    if (this.pid !== undefined) trackPid(this.pid);
  }

  /** Starts it again if a scenario that kills it ended early. */
  async ensureRunning(): Promise<void> {
    if (!this.server) await this.start();
  }

  /** postgres://hcp:<password>@127.0.0.1:<port>/<database> */
  url(database = 'hcp'): string {
    if (!this.server) throw new Error('chaos postgres is not started');
    const url = new URL(this.server.connectionString);
    url.pathname = `/${database}`;
    return url.toString();
  }

  async createDatabase(name: string): Promise<string> {
    await this.query(`CREATE DATABASE ${name}`);
    return this.url(name);
  }

  /** SIGKILL of the postmaster: no shutdown checkpoint, backends die as they notice, crash recovery on start. */
  async kill(): Promise<void> {
    const pid = this.pid ?? this.postmasterPid();
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
    untrackPid(pid);
    this.pid = undefined;
    this.server = undefined;
    // Backends leave within a moment of their postmaster; the next start takes over what remains.
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && alive(pid)) await sleep(50);
  }

  async stop(): Promise<void> {
    await this.server?.stop().catch(() => undefined);
    if (this.pid !== undefined) untrackPid(this.pid);
    this.server = undefined;
    this.pid = undefined;
  }

  async query<T extends object = Record<string, unknown>>(
    sql: string,
    params: unknown[] = [],
    database = 'hcp',
  ): Promise<T[]> {
    const client = new Client({ connectionString: this.url(database), application_name: 'chaos-suite' });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query<T>(sql, params)).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  private postmasterPid(): number | undefined {
    try {
      const text = readFileSync(path.join(this.dataDir, 'postgres', 'postmaster.pid'), 'utf8');
      const pid = Number.parseInt(text.split('\n')[0] ?? '', 10);
      return Number.isInteger(pid) ? pid : undefined;
    } catch {
      return undefined;
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    return false;
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
