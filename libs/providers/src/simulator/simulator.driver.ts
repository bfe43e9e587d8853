/**
 * The simulator: a ProviderDriver whose "hypervisor" is a table in PostgreSQL. It is the provider
 * of the embedded default and the one benchmarks and tests drive, so it behaves like a real one
 * where it matters to HCP: operations take time, honour the job's deadline and abort signal, can
 * fail on demand, and a create interrupted half-way is found and finished by the next attempt.
 */
import { createHash, randomBytes } from 'node:crypto';
import { HcpError, conflict, notFound } from '@hcp/domain';
import type {
  CallContext,
  Capabilities,
  ConsoleType,
  CreateVmSpec,
  ProviderConsole,
  ProviderDriver,
  VmAddress,
  VmDescription,
} from '../spi/provider-driver';
import { createDuplexPair } from '../rfb/duplex-pair';
import { SimulatorConsoles } from './simulator-consoles';
import { SimulatorFaults, spendWithinCall, throwIfCallOver, type SimulatorOperation } from './simulator-faults';
import type { SimulatorPhase, SimulatorPower, SimulatorState, SimulatorVm } from './simulator-state';

/** Step durations in milliseconds, before `scale` and `jitter` are applied. */
export interface SimulatorLatency {
  /** Multiplies every step; 0 removes latency entirely (benchmarks, fast tests). */
  scale: number;
  /** Each step varies uniformly by ±jitter of its duration (0.1 = ±10%); 0 makes timings exact. */
  jitter: number;
  cloneMs: number;
  configureMs: number;
  bootMs: number;
  startMs: number;
  stopGracefulMs: number;
  stopForceMs: number;
  rebootMs: number;
  rebootForceMs: number;
  deleteMs: number;
  describeMs: number;
}

export const DEFAULT_SIMULATOR_LATENCY: Readonly<SimulatorLatency> = Object.freeze({
  scale: 1,
  jitter: 0.1,
  cloneMs: 1500,
  configureMs: 300,
  bootMs: 800,
  startMs: 800,
  stopGracefulMs: 1000,
  stopForceMs: 200,
  rebootMs: 1200,
  rebootForceMs: 400,
  deleteMs: 600,
  describeMs: 50,
});

/** Defaults with overrides; rejects negative or non-finite values so config mistakes fail at start-up. */
export function simulatorLatency(overrides: Partial<SimulatorLatency> = {}): SimulatorLatency {
  const latency: SimulatorLatency = { ...DEFAULT_SIMULATOR_LATENCY, ...overrides };
  for (const [key, value] of Object.entries(latency)) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new HcpError(
        'INVALID_REQUEST',
        `simulator latency ${key} must be a finite number >= 0, got ${String(value)}`,
      );
    }
  }
  if (latency.jitter > 1) {
    throw new HcpError('INVALID_REQUEST', `simulator latency jitter must be between 0 and 1, got ${latency.jitter}`);
  }
  return latency;
}

export interface SimulatorDriverOptions {
  state: SimulatorState;
  latency: SimulatorLatency;
  faults: SimulatorFaults;
  clusterId: string;
  providerId: string;
  /** Source for fault probabilities and latency jitter; values in [0, 1). */
  random?: () => number;
  /** How often an open console checks that its VM still runs (a stop by another process). Default 2 s. */
  consoleWatchMs?: number;
}

const CAPABILITIES: Readonly<Capabilities> = Object.freeze({
  // Both are the same in-process RFB server; HCP's console proxy serves them to the tenant.
  console_types: ['vnc', 'webconsole'] as ConsoleType[],
  reboot: true,
  graceful_stop: true,
  snapshots: false,
  resize: false,
  guest_agent_addresses: true,
  // updateTags writes the tenant's tags onto the VM; describe and listVms report them back.
  provider_tags: true,
});

type LatencyStep = Exclude<keyof SimulatorLatency, 'scale' | 'jitter'>;

/**
 * A stable private address per VM, so a VM keeps its IP across stop/start the way a DHCP
 * reservation would, and tests can predict it. Derived from the hcp_id; collisions in 10.0.0.0/8
 * are possible but harmless for a simulator.
 */
export function simulatedAddress(hcpId: string): VmAddress {
  const digest = createHash('sha256').update(hcpId).digest();
  // Last octet stays within 1..254 to avoid network and broadcast addresses.
  const address = `10.${digest[0]}.${digest[1]}.${1 + (digest[2] % 254)}`;
  return { type: 'ipv4', address, nic: 'net0' };
}

/** A create's step in `phase`: what it waits for, and the phase (and power) it leads to. */
function createStep(
  phase: Exclude<SimulatorPhase, 'ready'>,
  spec: CreateVmSpec,
): { wait: LatencyStep; label: string; next: SimulatorPhase; power?: SimulatorPower } {
  switch (phase) {
    case 'cloning':
      return { wait: 'cloneMs', label: 'clone', next: 'configuring' };
    case 'configuring':
      // power_on comes from this attempt's spec: a retried job carries the same spec.
      return { wait: 'configureMs', label: 'configure', next: spec.power_on ? 'booting' : 'ready' };
    case 'booting':
      return {
        wait: 'bootMs',
        label: 'boot',
        next: 'ready',
        power: { power_state: 'running', addresses: [simulatedAddress(spec.hcp_id)] },
      };
  }
}

export class SimulatorDriver implements ProviderDriver {
  readonly type = 'simulator';

  private readonly state: SimulatorState;
  private readonly latency: SimulatorLatency;
  private readonly faults: SimulatorFaults;
  private readonly clusterId: string;
  private readonly providerId: string;
  private readonly random: () => number;
  private readonly consoles: SimulatorConsoles;

  constructor(options: SimulatorDriverOptions) {
    this.state = options.state;
    this.latency = simulatorLatency(options.latency);
    this.faults = options.faults;
    this.clusterId = options.clusterId;
    this.providerId = options.providerId;
    this.random = options.random ?? Math.random;
    this.consoles = new SimulatorConsoles({
      watchMs: options.consoleWatchMs ?? 2000,
      isRunning: async (hcpId) => (await this.state.findByHcpId(hcpId))?.power_state === 'running',
    });
  }

  capabilities(): Capabilities {
    return { ...CAPABILITIES, console_types: [...CAPABILITIES.console_types] };
  }

  async createVm(spec: CreateVmSpec, ctx: CallContext): Promise<VmDescription> {
    await this.begin('create', ctx);

    // Inserted first: a create's first attempt (the usual case) costs one statement, and a retried one,
    // or the loser of a race, reads the row that is there and carries on from its phase.
    const start = await this.pastInstantSteps('cloning', spec, ctx);
    let vm =
      (await this.state.insertIfAbsent({
        hcp_id: spec.hcp_id,
        name: spec.name,
        project_id: spec.project_id,
        image_ref: spec.image_ref,
        vcpus: spec.vcpus,
        ram_mb: spec.ram_mb,
        disk_gb: spec.disk_gb,
        tags: spec.tags,
        cluster_id: this.clusterId,
        ...start,
      })) ?? (await this.state.findByHcpId(spec.hcp_id));

    // Each pass performs the step of the phase the row is in, then advances it only if it is still
    // there; a concurrent create that got there first makes the update a no-op and we re-read.
    while (vm && vm.phase !== 'ready') {
      const from = vm.phase;
      const step = createStep(from, spec);
      await this.step(step.wait, ctx, step.label);
      const to = await this.pastInstantSteps(step.next, spec, ctx, step.power);
      vm =
        (await this.state.advancePhase(spec.hcp_id, from, to.phase, to.power)) ??
        (await this.state.findByHcpId(spec.hcp_id));
    }

    if (!vm) {
      // Only a delete racing this create gets here; a retry would create the VM afresh.
      throw new HcpError('CONFLICT', `VM ${spec.hcp_id} was deleted while it was being created`, undefined, true);
    }
    return this.describe(vm);
  }

  async startVm(hcpId: string, ctx: CallContext): Promise<VmDescription> {
    await this.begin('start', ctx);
    const vm = await this.requireReady(hcpId);
    if (vm.power_state === 'running') return this.describe(vm);
    await this.step('startMs', ctx, 'start');
    return this.describe(await this.setPower(hcpId, 'running'));
  }

  async stopVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    await this.begin('stop', ctx);
    const vm = await this.requireReady(hcpId);
    if (vm.power_state === 'stopped') return this.describe(vm);
    await this.step(force ? 'stopForceMs' : 'stopGracefulMs', ctx, force ? 'power off' : 'shutdown');
    const stopped = await this.setPower(hcpId, 'stopped');
    this.consoles.closeFor(hcpId);
    return this.describe(stopped);
  }

  async rebootVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    await this.begin('reboot', ctx);
    const vm = await this.requireReady(hcpId);
    if (vm.power_state !== 'running') {
      // Hypervisors refuse to reboot a powered-off VM; retrying would not change that.
      throw conflict(`VM ${hcpId} is not running`, { power_state: vm.power_state });
    }
    await this.step(force ? 'rebootForceMs' : 'rebootMs', ctx, force ? 'reset' : 'reboot');
    // Re-read rather than reuse `vm`: the VM may have been stopped or deleted meanwhile.
    const after = await this.state.findByHcpId(hcpId);
    if (!after) throw notFound(`VM ${hcpId}`);
    return this.describe(after);
  }

  async deleteVm(hcpId: string, ctx: CallContext): Promise<void> {
    await this.begin('delete', ctx);
    // Deleting is allowed in any phase: a half-created VM must be removable too.
    const vm = await this.state.findByHcpId(hcpId);
    if (!vm) return;
    await this.step('deleteMs', ctx, 'delete');
    await this.state.deleteByHcpId(hcpId);
    this.consoles.closeFor(hcpId);
  }

  async checkConnectivity(ctx: CallContext): Promise<void> {
    throwIfCallOver(ctx, 'connectivity');
    await this.state.ping();
  }

  async describeVm(hcpId: string, ctx: CallContext): Promise<VmDescription | null> {
    await this.begin('describe', ctx);
    await this.step('describeMs', ctx, 'describe');
    const vm = await this.state.findByHcpId(hcpId);
    return vm ? this.describe(vm) : null;
  }

  /** Every VM of this cluster, half-created ones included. */
  async listVms(ctx: CallContext): Promise<VmDescription[]> {
    await this.begin('list', ctx);
    await this.step('describeMs', ctx, 'list');
    // A VM still being created has no power state to speak of yet (a real hypervisor shows it locked).
    return (await this.state.listVms(this.clusterId)).map((vm) =>
      vm.phase === 'ready' ? this.describe(vm) : { ...this.describe(vm), power_state: 'unknown' as const },
    );
  }

  async updateTags(hcpId: string, tags: Record<string, string>, ctx: CallContext): Promise<void> {
    await this.begin('tags', ctx);
    await this.step('configureMs', ctx, 'tags');
    if (!(await this.state.setTags(hcpId, tags))) throw notFound(`VM ${hcpId}`);
  }

  /**
   * A console to the VM: an in-process RFB server asking for VNC authentication with a password
   * made for this call, on one end of an in-memory pair; HCP gets the other end.
   */
  async openConsole(hcpId: string, type: ConsoleType, ctx: CallContext): Promise<ProviderConsole> {
    await this.begin('console', ctx);
    if (!CAPABILITIES.console_types.includes(type)) {
      throw new HcpError('FEATURE_NOT_SUPPORTED', `the simulator offers no ${type} console`, {
        capability: 'console',
        console_type: type,
      });
    }
    const vm = await this.requireReady(hcpId);
    if (vm.power_state !== 'running') throw conflict(`VM ${hcpId} is not running`, { power_state: vm.power_state });
    throwIfCallOver(ctx, 'console');
    // 8 characters: VNC authentication uses no more of a password.
    const password = randomBytes(6).toString('base64url');
    const [providerSide, hcpSide] = createDuplexPair();
    this.consoles.serve(hcpId, providerSide, password, vm.name);
    return { protocol: 'rfb', stream: hcpSide, rfb_password: password };
  }

  /** Open consoles (of one VM, or all): for tests and diagnostics. */
  openConsoleCount(hcpId?: string): number {
    return this.consoles.count(hcpId);
  }

  /** Common entry of every operation: a call already over does nothing, then faults get their say. */
  private async begin(operation: SimulatorOperation, ctx: CallContext): Promise<void> {
    throwIfCallOver(ctx, operation);
    await this.faults.inject(operation, ctx, this.random);
  }

  /**
   * The phase a create reaches from `phase` through the steps that take no time, and the power they set.
   * The row is written once past all of them: a phase is recorded so that a worker that dies during its
   * step resumes there, and an instant step leaves no moment to die in. With no latency (benchmarks, most
   * tests) a create is therefore one INSERT, as a provider that answers at once would record it.
   */
  private async pastInstantSteps(
    phase: SimulatorPhase,
    spec: CreateVmSpec,
    ctx: CallContext,
    power?: SimulatorPower,
  ): Promise<{ phase: SimulatorPhase; power?: SimulatorPower }> {
    while (phase !== 'ready') {
      const step = createStep(phase, spec);
      if (this.takesTime(step.wait)) break;
      await this.step(step.wait, ctx, step.label);
      phase = step.next;
      power = step.power ?? power;
    }
    return { phase, power };
  }

  private takesTime(step: LatencyStep): boolean {
    return this.latency[step] * this.latency.scale > 0;
  }

  private async step(step: LatencyStep, ctx: CallContext, label: string): Promise<void> {
    const { scale, jitter } = this.latency;
    const base = this.latency[step] * scale;
    // Zero latency must not even touch the timer queue: benchmarks measure HCP, not setTimeout.
    if (base <= 0) {
      throwIfCallOver(ctx, label);
      return;
    }
    const factor = jitter > 0 ? 1 + jitter * (2 * this.random() - 1) : 1;
    await spendWithinCall(Math.max(0, base * factor), ctx, label);
  }

  private async requireReady(hcpId: string): Promise<SimulatorVm> {
    const vm = await this.state.findByHcpId(hcpId);
    if (!vm) throw notFound(`VM ${hcpId}`);
    if (vm.phase !== 'ready') {
      // The create that owns it will finish (or its retry will), so this is worth retrying.
      throw new HcpError('CONFLICT', `VM ${hcpId} is still being created`, { phase: vm.phase }, true);
    }
    return vm;
  }

  private async setPower(hcpId: string, powerState: 'running' | 'stopped'): Promise<SimulatorVm> {
    const addresses = powerState === 'running' ? [simulatedAddress(hcpId)] : [];
    const vm = await this.state.setPower(hcpId, powerState, addresses);
    // Deleted while the step ran: report it as gone, the same as if the call had come later.
    if (!vm) throw notFound(`VM ${hcpId}`);
    return vm;
  }

  private describe(vm: SimulatorVm): VmDescription {
    return {
      hcp_id: vm.hcp_id,
      power_state: vm.power_state,
      addresses: vm.addresses,
      provider_ref: { provider_id: this.providerId, cluster_id: vm.cluster_id, sim_id: vm.sim_id },
      tags: vm.tags,
    };
  }
}
