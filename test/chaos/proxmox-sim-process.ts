import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import { killGroup, spawnTracked } from './children';

const ROOT = path.join(__dirname, '..', '..');

export interface SimVm {
  vmid: number;
  node: string;
  status: string;
  template?: boolean;
  hcp_id?: string;
  name?: string;
  /** `clone`, `create`, ... while Proxmox works on the VM. */
  lock?: string;
}

/**
 * The Proxmox VE simulator as its own process (the entry point of `npm run sim:proxmox`), so the
 * provider's inventory lives outside HCP and outlives every HCP kill; the suite reads it back through
 * the simulator's admin routes, never through HCP.
 */
export class ProxmoxSimProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    private readonly adminKey: string,
    private readonly caPem: string,
    /** The registration body the simulator prints for POST /v1/ops/providers. */
    readonly providerBody: Record<string, any>,
  ) {}

  static async start(dir: string, latencyScale: number): Promise<ProxmoxSimProcess> {
    const child = spawnTracked(
      process.execPath,
      [path.join(ROOT, 'scripts/ts-run.js'), 'test/simulators/proxmox/main.ts'],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/tmp',
          PVE_SIM_HOST: '127.0.0.1',
          PVE_SIM_PORT: '0',
          PVE_SIM_LATENCY_SCALE: String(latencyScale),
          PVE_SIM_DIR: dir,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    const banner = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`proxmox simulator did not start in 60 s: ${err}`)), 60_000);
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('Images map to templates')) {
          clearTimeout(timer);
          resolve(out);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`proxmox simulator exited with ${code}: ${err}`));
      });
    });
    const url = /listening on (https:\/\/\S+)\/api2\/json/.exec(banner)?.[1];
    const adminKey = /X-Sim-Admin-Key: ([^)\s]+)\)/.exec(banner)?.[1];
    const afterHeading = banner.slice(banner.indexOf('Provider registration body'));
    const json = afterHeading.slice(afterHeading.indexOf('{'), afterHeading.indexOf('\n}\n') + 2);
    if (!url || !adminKey) throw new Error(`cannot read the simulator's banner:\n${banner}`);
    const caPem = readFileSync(path.join(dir, 'ca.pem'), 'utf8');
    return new ProxmoxSimProcess(child, url, adminKey, caPem, JSON.parse(json) as Record<string, any>);
  }

  /** Every VM the "cluster" holds (templates excluded), straight from the simulator. */
  async vms(): Promise<SimVm[]> {
    const { status, body } = await this.request('GET', '/_sim/vms', { 'x-sim-admin-key': this.adminKey });
    if (status !== 200) throw new Error(`simulator /_sim/vms: ${status}`);
    return (JSON.parse(body) as SimVm[]).filter((vm) => !vm.template);
  }

  /** Adds a fault rule (the simulator's `POST /_sim/faults`); its id. */
  async addFault(rule: Record<string, unknown>): Promise<string> {
    const { status, body } = await this.request('POST', '/_sim/faults', { 'x-sim-admin-key': this.adminKey }, rule);
    if (status !== 201) throw new Error(`simulator POST /_sim/faults: ${status} ${body}`);
    return (JSON.parse(body) as { id: string }).id;
  }

  async clearFaults(): Promise<void> {
    await this.request('DELETE', '/_sim/faults', { 'x-sim-admin-key': this.adminKey });
  }

  /**
   * A call on the Proxmox API as someone else than HCP would make it (an admin in the Proxmox UI), with
   * an API token of its own: what changes a VM behind HCP's back.
   */
  async pve(method: string, apiPath: string): Promise<{ status: number; body: string }> {
    this.pveAuth ??= (async () => {
      const made = await this.request(
        'POST',
        '/_sim/tokens',
        { 'x-sim-admin-key': this.adminKey },
        {
          userid: 'root@pam',
          tokenid: 'chaos',
        },
      );
      if (made.status !== 201) throw new Error(`simulator POST /_sim/tokens: ${made.status} ${made.body}`);
      return (JSON.parse(made.body) as { header: string }).header;
    })();
    return this.request(method, `/api2/json${apiPath}`, { authorization: await this.pveAuth });
  }

  private pveAuth?: Promise<string>;

  private request(
    method: string,
    requestPath: string,
    headers: Record<string, string>,
    json?: unknown,
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const payload = json === undefined ? undefined : JSON.stringify(json);
      const req = https.request(
        `${this.url}${requestPath}`,
        {
          method,
          headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) },
          ca: this.caPem,
          timeout: 10_000,
        },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('timeout', () => req.destroy(new Error(`simulator ${method} ${requestPath} timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  stop(): void {
    if (this.child.pid !== undefined) killGroup(this.child.pid, 'SIGKILL');
  }
}
