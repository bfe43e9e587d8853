/**
 * vcsim, VMware's vCenter simulator, for the vSphere suites: our Go main over govmomi v0.52.0's simulator
 * engine (test/simulators/vcsim), one child process per start, on loopback with a fresh self-signed
 * certificate. The binary comes from HCP_VCSIM_BIN (.ci/run builds it) or is built here by
 * ensure-vcsim.sh into the same cache (needs Go; about 2 min once, then reused).
 *
 * Besides the SOAP SDK the simulator runs a loopback control endpoint: SOAP faults, hangs and delays per
 * method, and vcsim's own inventory, read through the vim25 API inside the simulator, never through HCP.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ENSURE = join(__dirname, '..', 'simulators', 'vcsim', 'ensure-vcsim.sh');

/** One VM as vcsim holds it. */
export interface VcsimVm {
  name: string;
  /** The managed object id, e.g. `vm-68`. */
  moref: string;
  power_state: 'poweredOn' | 'poweredOff' | 'suspended';
  template: boolean;
  /** extraConfig entries whose key starts with `hcp.` or `guestinfo.hcp`. */
  extra_config: Record<string, string>;
  /** Inventory path of the VM's resource pool, e.g. `/DC0/host/DC0_C0/Resources`. */
  resource_pool: string;
  /** Inventory path of the VM's folder, e.g. `/DC0/vm`. */
  folder: string;
  datastores: string[];
  host: string;
  num_cpu: number;
  memory_mb: number;
}

export interface VcsimOptions {
  /** Milliseconds added before serving these SOAP methods, e.g. `{ CloneVM_Task: 1000 }`. */
  methodDelays?: Record<string, number>;
  username?: string;
  password?: string;
  /** Datastores LocalDS_0 .. LocalDS_{n-1}, each on every host (1 when absent, as upstream). */
  datastores?: number;
  /** Extra VM folders, paths under /DC0/vm, e.g. `hcp/prod` (the VPX model has none). */
  vmFolders?: string[];
  /** Extra resource pools, paths under /DC0/host/DC0_C0/Resources, e.g. `hcp`. */
  resourcePools?: string[];
}

export interface Vcsim {
  /** `https://127.0.0.1:PORT/sdk` */
  sdkUrl: string;
  /** The server certificate, self-signed for 127.0.0.1/localhost: trust it as the CA. */
  caPem: string;
  /** SHA-256 over the DER certificate, lower-case hex without separators. */
  thumbprintSha256: string;
  username: string;
  password: string;
  /** Every VM, sorted by name, as vcsim itself sees it. */
  inventory(): Promise<VcsimVm[]>;
  /** The next `times` calls of `method` (every call until cleared when absent) answer this vim25 fault. */
  injectFault(method: string, fault: string, times?: number): Promise<void>;
  /** The next `times` calls of `method` (every call until cleared) get no answer until clearFaults(). */
  hang(method: string, times?: number): Promise<void>;
  /** Calls of `method` are served `ms` later (0 removes the delay). */
  setDelay(method: string, ms: number): Promise<void>;
  /** Removes faults, hangs and delays; held calls are then served. */
  clearFaults(): Promise<void>;
  /** SOAP calls received per method since the start. */
  calls(): Promise<Record<string, number>>;
  /** Changes a VM's power state through vcsim's API, behind HCP's back. */
  setPowerState(vmName: string, state: 'poweredOn' | 'poweredOff' | 'suspended'): Promise<void>;
  /** Powers off and destroys a VM through vcsim's API, behind HCP's back. */
  destroyVm(vmName: string): Promise<void>;
  stop(): Promise<void>;
}

/** The path of a vcsim binary that exists now, or undefined. */
function prebuiltBinary(): string | undefined {
  const bin = process.env.HCP_VCSIM_BIN;
  if (!bin) return undefined;
  try {
    accessSync(bin, constants.X_OK);
    return bin;
  } catch {
    return undefined;
  }
}

/** Whether vcsim can run here: a built binary (HCP_VCSIM_BIN) or Go to build one. Synchronous: suites decide at load time. */
export function vcsimAvailable(): boolean {
  if (prebuiltBinary()) return true;
  try {
    execFileSync('go', ['version'], { timeout: 10_000, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * `describe` when vcsim can run; otherwise a suite that fails in CI (CI=true) and is skipped with a
 * message elsewhere.
 */
export function describeWithVcsim(name: string, body: () => void): void {
  if (vcsimAvailable()) {
    describe(name, body);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      it('needs vcsim (HCP_VCSIM_BIN or Go to build it), which CI builds in .ci/run', () => {
        throw new Error('vcsim is not available: HCP_VCSIM_BIN is unset and Go is not installed');
      });
    });
    return;
  }
  console.warn(`skipping "${name}": vcsim is not available (set HCP_VCSIM_BIN or install Go; CI=true fails instead)`);
  describe.skip(name, body);
}

let built: Promise<string> | undefined;

/** The binary: HCP_VCSIM_BIN, else built (or found in the cache) by ensure-vcsim.sh. */
export function vcsimBinary(): Promise<string> {
  const bin = prebuiltBinary();
  if (bin) return Promise.resolve(bin);
  built ??= run(ENSURE, [], { timeout: 900_000, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout }) => stdout.trim().split('\n').pop()!,
  );
  return built;
}

export async function startVcsim(options: VcsimOptions = {}): Promise<Vcsim> {
  const bin = await vcsimBinary();
  const args = ['-l', '127.0.0.1:0', '-control', '127.0.0.1:0'];
  const delays = Object.entries(options.methodDelays ?? {});
  if (delays.length) args.push('-method-delay', delays.map(([m, ms]) => `${m}:${ms}`).join(','));
  if (options.username) args.push('-username', options.username);
  if (options.password) args.push('-password', options.password);
  if (options.datastores !== undefined) args.push('-ds', String(options.datastores));
  for (const folder of options.vmFolders ?? []) args.push('-vm-folder', folder);
  for (const pool of options.resourcePools ?? []) args.push('-resource-pool', pool);
  // stdin stays open: vcsim exits when it closes, so a test runner that dies takes its vcsim with it.
  const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-8192);
  });
  try {
    const info = await readStartupLines(child, () => stderr);
    return new RunningVcsim(child, info);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
}

function readStartupLines(child: ChildProcess, stderr: () => string): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const info: Record<string, string> = {};
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => fail('did not print VCSIM_READY within 60 s'), 60_000);
    function fail(why: string): void {
      clearTimeout(timer);
      lines.close();
      reject(new Error(`vcsim ${why}: ${stderr()}`));
    }
    lines.on('line', (line) => {
      const eq = line.indexOf('=');
      if (eq > 0) info[line.slice(0, eq)] = line.slice(eq + 1);
      if (line === 'VCSIM_READY=1') {
        clearTimeout(timer);
        lines.close();
        resolve(info);
      }
    });
    child.once('exit', (code, signal) => fail(`exited (${code ?? signal}) before it was ready`));
    child.once('error', (err) => fail(`could not start: ${err.message}`));
  });
}

class RunningVcsim implements Vcsim {
  readonly sdkUrl: string;
  readonly caPem: string;
  readonly thumbprintSha256: string;
  readonly username: string;
  readonly password: string;
  private readonly controlUrl: string;
  private readonly exited: Promise<void>;

  constructor(
    private readonly child: ChildProcess,
    info: Record<string, string>,
  ) {
    this.sdkUrl = info.VCSIM_URL;
    this.controlUrl = info.VCSIM_CONTROL_URL;
    this.caPem = readFileSync(info.VCSIM_CA_FILE, 'utf8');
    this.thumbprintSha256 = info.VCSIM_THUMBPRINT_SHA256;
    this.username = info.VCSIM_USERNAME;
    this.password = info.VCSIM_PASSWORD;
    this.exited =
      child.exitCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
  }

  async inventory(): Promise<VcsimVm[]> {
    return ((await this.control('GET', '/control/inventory')) as { vms: VcsimVm[] }).vms;
  }

  async injectFault(method: string, fault: string, times?: number): Promise<void> {
    await this.control('POST', '/control/faults', { method, fault, times: times ?? 0 });
  }

  async hang(method: string, times?: number): Promise<void> {
    await this.control('POST', '/control/hangs', { method, times: times ?? 0 });
  }

  async setDelay(method: string, ms: number): Promise<void> {
    await this.control('POST', '/control/delays', { method, ms });
  }

  async clearFaults(): Promise<void> {
    await this.control('DELETE', '/control');
  }

  async calls(): Promise<Record<string, number>> {
    return (await this.control('GET', '/control/calls')) as Record<string, number>;
  }

  async setPowerState(vmName: string, state: 'poweredOn' | 'poweredOff' | 'suspended'): Promise<void> {
    await this.control('POST', '/control/vms/power', { name: vmName, state });
  }

  async destroyVm(vmName: string): Promise<void> {
    await this.control('POST', '/control/vms/destroy', { name: vmName });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(killer);
  }

  private async control(method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(this.controlUrl + path, {
      method,
      headers: body === undefined ? undefined : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`vcsim control ${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  }
}
