import { randomBytes, randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import {
  connectRfbServer,
  SimulatorDriver,
  SimulatorFaults,
  SimulatorState,
  simulatedAddress,
  simulatorLatency,
  type CallContext,
  type CreateVmSpec,
  type SimulatorLatency,
} from '@hcp/providers';
import { caught, closedStream, readServerInit } from './driver-contract';

const DATABASE_URL = process.env.HCP_TEST_DATABASE_URL ?? 'postgres://hcp:hcp@127.0.0.1:5432/hcp_test';
// A schema of its own per run, so parallel test files and leftovers from a crashed run never collide.
const SCHEMA = `sim_test_${randomBytes(6).toString('hex')}`;
const CLUSTER = 'cluster-a';
const PROVIDER = 'provider-sim';

let pool: Pool;
let state: SimulatorState;

beforeAll(async () => {
  pool = new Pool({ connectionString: DATABASE_URL, max: 8 });
  state = new SimulatorState(pool, SCHEMA);
  await state.install();
});

afterAll(async () => {
  await state.drop();
  await pool.end();
});

function ctx(ms = 5000, signal: AbortSignal = new AbortController().signal): CallContext {
  return { deadline: new Date(Date.now() + ms), signal };
}

function spec(overrides: Partial<CreateVmSpec> = {}): CreateVmSpec {
  return {
    hcp_id: `vm-${randomUUID()}`,
    project_id: 'prj-1',
    name: 'web-1',
    image_ref: 'tmpl-ubuntu-24.04',
    vcpus: 2,
    ram_mb: 2048,
    disk_gb: 20,
    ssh_keys: [],
    tags: { env: 'test' },
    power_on: true,
    ...overrides,
  };
}

const zeroSteps: Partial<SimulatorLatency> = {
  cloneMs: 0,
  configureMs: 0,
  bootMs: 0,
  startMs: 0,
  stopGracefulMs: 0,
  stopForceMs: 0,
  rebootMs: 0,
  rebootForceMs: 0,
  deleteMs: 0,
  describeMs: 0,
};

const INSTANT = simulatorLatency({ scale: 0 });

function driver(options: { latency?: Partial<SimulatorLatency>; faults?: string; on?: SimulatorState } = {}) {
  return new SimulatorDriver({
    state: options.on ?? state,
    // Explicit latencies are exact (no jitter) so timing assertions hold.
    latency: options.latency ? simulatorLatency({ scale: 1, jitter: 0, ...zeroSteps, ...options.latency }) : INSTANT,
    faults: SimulatorFaults.parse(options.faults ?? ''),
    clusterId: CLUSTER,
    providerId: PROVIDER,
  });
}

describe('SimulatorDriver on PostgreSQL', () => {
  it('creates a VM and powers it on', async () => {
    const s = spec();
    const vm = await driver().createVm(s, ctx());

    expect(vm.hcp_id).toBe(s.hcp_id);
    expect(vm.power_state).toBe('running');
    expect(vm.addresses).toEqual([simulatedAddress(s.hcp_id)]);
    expect(vm.addresses[0].address).toMatch(/^10\.\d{1,3}\.\d{1,3}\.\d{1,3}$/);
    expect(vm.addresses[0].nic).toBe('net0');
    expect(vm.provider_ref).toEqual({ provider_id: PROVIDER, cluster_id: CLUSTER, sim_id: expect.any(String) });

    const row = await state.findByHcpId(s.hcp_id);
    expect(row).toMatchObject({
      phase: 'ready',
      name: 'web-1',
      project_id: 'prj-1',
      image_ref: 'tmpl-ubuntu-24.04',
      vcpus: 2,
      ram_mb: 2048,
      disk_gb: 20,
      tags: { env: 'test' },
      cluster_id: CLUSTER,
      power_state: 'running',
    });
  });

  it('creates a VM without powering it on when asked', async () => {
    const s = spec({ power_on: false });
    const vm = await driver().createVm(s, ctx());
    expect(vm.power_state).toBe('stopped');
    expect(vm.addresses).toEqual([]);
  });

  it('returns the same VM for a second create with the same hcp id', async () => {
    const s = spec();
    const d = driver();
    const first = await d.createVm(s, ctx());
    const second = await d.createVm({ ...s, name: 'renamed' }, ctx());

    expect(second).toEqual(first);
    expect(await state.countByHcpId(s.hcp_id)).toBe(1);
    expect((await state.findByHcpId(s.hcp_id))?.name).toBe('web-1');
  });

  it('makes one VM from two concurrent creates', async () => {
    const s = spec();
    // Real latency so both calls are in flight at once, in two drivers as if in two processes.
    const latency = { cloneMs: 40, configureMs: 10, bootMs: 20 };
    const [a, b] = await Promise.all([driver({ latency }).createVm(s, ctx()), driver({ latency }).createVm(s, ctx())]);

    expect(a.provider_ref.sim_id).toBe(b.provider_ref.sim_id);
    expect(a.power_state).toBe('running');
    expect(b.power_state).toBe('running');
    expect(await state.countByHcpId(s.hcp_id)).toBe(1);
  });

  it('makes one VM from many concurrent creates with no latency', async () => {
    const s = spec();
    const results = await Promise.all(Array.from({ length: 8 }, () => driver().createVm(s, ctx())));
    expect(new Set(results.map((r) => r.provider_ref.sim_id)).size).toBe(1);
    expect(results.every((r) => r.power_state === 'running')).toBe(true);
    expect(await state.countByHcpId(s.hcp_id)).toBe(1);
  });

  it('records a create with no latency in one statement, already ready', async () => {
    const s = spec();
    const statements = jest.spyOn(pool, 'query');
    try {
      await driver().createVm(s, ctx());
      expect(statements).toHaveBeenCalledTimes(1);
    } finally {
      statements.mockRestore();
    }
    expect(await state.findByHcpId(s.hcp_id)).toMatchObject({
      phase: 'ready',
      power_state: 'running',
      addresses: [simulatedAddress(s.hcp_id)],
    });
  });

  it('records the phase a create waits in, past the steps before it that took no time', async () => {
    const s = spec();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const slowConfigure = driver({ latency: { configureMs: 60_000 } });
    expect((await caught(slowConfigure.createVm(s, ctx(120_000, controller.signal)))).code).toBe('PROVIDER_TIMEOUT');
    expect(await state.findByHcpId(s.hcp_id)).toMatchObject({ phase: 'configuring', power_state: 'stopped' });

    // The next attempt resumes there; its boot takes no time either, so the row moves to ready at once.
    const statements = jest.spyOn(pool, 'query');
    try {
      expect((await driver().createVm(s, ctx())).power_state).toBe('running');
      expect(statements).toHaveBeenCalledTimes(3); // the insert that found the row, its read, one update
    } finally {
      statements.mockRestore();
    }
    expect(await state.findByHcpId(s.hcp_id)).toMatchObject({ phase: 'ready', power_state: 'running' });
  });

  it('resumes a VM left mid-clone instead of creating another', async () => {
    const s = spec();
    // What a crash right after the provider accepted the clone leaves behind.
    await state.insertIfAbsent({ ...s, cluster_id: CLUSTER });
    const stuck = await state.findByHcpId(s.hcp_id);
    expect(stuck?.phase).toBe('cloning');

    const vm = await driver().createVm(s, ctx());

    expect(vm.provider_ref.sim_id).toBe(stuck?.sim_id);
    expect(vm.power_state).toBe('running');
    expect(await state.countByHcpId(s.hcp_id)).toBe(1);
    expect((await state.findByHcpId(s.hcp_id))?.phase).toBe('ready');
  });

  it('resumes a create that lost its lease mid-clone on the next attempt', async () => {
    const s = spec();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const err = await caught(driver({ latency: { cloneMs: 5000 } }).createVm(s, ctx(10_000, controller.signal)));
    expect(err.code).toBe('PROVIDER_TIMEOUT');
    const stuck = await state.findByHcpId(s.hcp_id);
    expect(stuck?.phase).toBe('cloning');

    const vm = await driver().createVm(s, ctx());
    expect(vm.provider_ref.sim_id).toBe(stuck?.sim_id);
    expect(vm.power_state).toBe('running');
    expect(await state.countByHcpId(s.hcp_id)).toBe(1);
  });

  it('refuses power operations on a VM still being created, retryably', async () => {
    const s = spec();
    await state.insertIfAbsent({ ...s, cluster_id: CLUSTER });
    const err = await caught(driver().startVm(s.hcp_id, ctx()));
    expect(err.code).toBe('CONFLICT');
    expect(err.retryable).toBe(true);
  });

  it('stops a VM gracefully, taking the graceful shutdown time', async () => {
    const s = spec();
    const d = driver({ latency: { stopGracefulMs: 80, stopForceMs: 1 } });
    await d.createVm(s, ctx());

    const started = Date.now();
    const vm = await d.stopVm(s.hcp_id, false, ctx());
    expect(Date.now() - started).toBeGreaterThanOrEqual(75);
    expect(vm.power_state).toBe('stopped');
    expect(vm.addresses).toEqual([]);

    // Stopping a stopped VM is a no-op, which is what a retried job needs.
    expect((await d.stopVm(s.hcp_id, false, ctx())).power_state).toBe('stopped');
  });

  it('stops a VM by force', async () => {
    const s = spec();
    const d = driver({ latency: { stopGracefulMs: 10_000, stopForceMs: 1 } });
    await d.createVm(s, ctx());

    const started = Date.now();
    const vm = await d.stopVm(s.hcp_id, true, ctx());
    expect(Date.now() - started).toBeLessThan(2000);
    expect(vm.power_state).toBe('stopped');
    expect((await state.findByHcpId(s.hcp_id))?.power_state).toBe('stopped');
  });

  it('starts a stopped VM with the same address and succeeds when it is already running', async () => {
    const s = spec({ power_on: false });
    const d = driver();
    await d.createVm(s, ctx());

    const started = await d.startVm(s.hcp_id, ctx());
    expect(started.power_state).toBe('running');
    expect(started.addresses).toEqual([simulatedAddress(s.hcp_id)]);
    expect(await d.startVm(s.hcp_id, ctx())).toEqual(started);
  });

  it('reboots a running VM, which stays running', async () => {
    const s = spec();
    const d = driver({ latency: { rebootMs: 20, rebootForceMs: 5 } });
    const created = await d.createVm(s, ctx());

    expect(await d.rebootVm(s.hcp_id, false, ctx())).toEqual(created);
    expect(await d.rebootVm(s.hcp_id, true, ctx())).toEqual(created);
  });

  it('refuses to reboot a stopped VM', async () => {
    const s = spec({ power_on: false });
    const d = driver();
    await d.createVm(s, ctx());
    const err = await caught(d.rebootVm(s.hcp_id, false, ctx()));
    expect(err.code).toBe('CONFLICT');
    expect(err.retryable).toBe(false);
  });

  it('deletes a VM, and deleting it twice succeeds', async () => {
    const s = spec();
    const d = driver();
    await d.createVm(s, ctx());

    await d.deleteVm(s.hcp_id, ctx());
    await d.deleteVm(s.hcp_id, ctx());

    expect(await state.countByHcpId(s.hcp_id)).toBe(0);
    expect(await d.describeVm(s.hcp_id, ctx())).toBeNull();
  });

  it('deletes a VM left mid-clone', async () => {
    const s = spec();
    await state.insertIfAbsent({ ...s, cluster_id: CLUSTER });
    await driver().deleteVm(s.hcp_id, ctx());
    expect(await state.countByHcpId(s.hcp_id)).toBe(0);
  });

  it('answers NOT_FOUND for start, stop and reboot of an unknown VM', async () => {
    const d = driver();
    for (const call of [
      () => d.startVm('vm-unknown', ctx()),
      () => d.stopVm('vm-unknown', false, ctx()),
      () => d.rebootVm('vm-unknown', false, ctx()),
    ]) {
      const err = await caught(call());
      expect(err.code).toBe('NOT_FOUND');
      expect(err.retryable).toBe(false);
    }
  });

  it('describes a VM with its provider reference, and an unknown one as null', async () => {
    const s = spec();
    const d = driver();
    const created = await d.createVm(s, ctx());
    expect(await d.describeVm(s.hcp_id, ctx())).toEqual(created);
    expect(await d.describeVm('vm-unknown', ctx())).toBeNull();
  });

  it('gives the configured code for an injected fail, retryable', async () => {
    const s = spec();
    const failing = driver({ faults: 'start=fail:RATE_LIMITED,create=fail' });

    const createErr = await caught(failing.createVm(s, ctx()));
    expect(createErr.code).toBe('PROVIDER_UNAVAILABLE');
    expect(createErr.retryable).toBe(true);
    // An injected fail happens before the provider accepted anything.
    expect(await state.countByHcpId(s.hcp_id)).toBe(0);

    await driver().createVm({ ...s, power_on: false }, ctx());
    const startErr = await caught(failing.startVm(s.hcp_id, ctx()));
    expect(startErr.code).toBe('RATE_LIMITED');
    expect(startErr.retryable).toBe(true);
  });

  it('gives PROVIDER_TIMEOUT at the deadline for an injected timeout', async () => {
    const s = spec();
    await driver().createVm(s, ctx());

    const started = Date.now();
    const err = await caught(driver({ faults: 'stop=timeout' }).stopVm(s.hcp_id, false, ctx(150)));
    const elapsed = Date.now() - started;
    expect(err.code).toBe('PROVIDER_TIMEOUT');
    expect(err.retryable).toBe(true);
    expect(elapsed).toBeGreaterThanOrEqual(140);
    expect(elapsed).toBeLessThan(2000);
    expect((await state.findByHcpId(s.hcp_id))?.power_state).toBe('running');
  });

  it('gives PROVIDER_TIMEOUT when a step would outlast the deadline', async () => {
    const s = spec();
    const started = Date.now();
    const err = await caught(driver({ latency: { cloneMs: 10_000 } }).createVm(s, ctx(100)));
    expect(err.code).toBe('PROVIDER_TIMEOUT');
    expect(err.details).toMatchObject({ reason: 'deadline', step: 'clone' });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('stops a long step promptly when the abort signal fires', async () => {
    const s = spec();
    const d = driver({ latency: { stopGracefulMs: 60_000 } });
    await d.createVm(s, ctx());

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const started = Date.now();
    const err = await caught(d.stopVm(s.hcp_id, false, ctx(120_000, controller.signal)));
    expect(err.code).toBe('PROVIDER_TIMEOUT');
    expect(err.details).toMatchObject({ reason: 'aborted' });
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await state.findByHcpId(s.hcp_id))?.power_state).toBe('running');
  });

  it('keeps its state for a new driver instance on the same schema', async () => {
    const s = spec();
    const created = await driver().createVm(s, ctx());

    // A second pool stands in for a restarted (or another) HCP process.
    const otherPool = new Pool({ connectionString: DATABASE_URL, max: 2 });
    try {
      const restarted = driver({ on: new SimulatorState(otherPool, SCHEMA) });
      expect(await restarted.describeVm(s.hcp_id, ctx())).toEqual(created);
      expect(await restarted.createVm(s, ctx())).toEqual(created);
      expect((await restarted.stopVm(s.hcp_id, true, ctx())).power_state).toBe('stopped');
      expect((await driver().describeVm(s.hcp_id, ctx()))?.power_state).toBe('stopped');
    } finally {
      await otherPool.end();
    }
  });

  describe('consoles', () => {
    it('offers vnc and webconsole consoles', () => {
      expect(driver().capabilities()).toEqual({
        console_types: ['vnc', 'webconsole'],
        reboot: true,
        graceful_stop: true,
        snapshots: false,
        resize: false,
        guest_agent_addresses: true,
        provider_tags: true,
      });
    });

    it('opens an RFB console that asks for its fresh password and shows the VM', async () => {
      const d = driver();
      const s = spec({ name: 'desk-1' });
      await d.createVm(s, ctx());
      const first = await d.openConsole(s.hcp_id, 'vnc', ctx());
      const second = await d.openConsole(s.hcp_id, 'webconsole', ctx());
      expect(first.rfb_password).toEqual(expect.any(String));
      expect(first.rfb_password).not.toBe(second.rfb_password);
      expect(await readServerInit(first)).toEqual({ width: 320, height: 200, name: 'desk-1' });
      expect(d.openConsoleCount(s.hcp_id)).toBe(2);
      // Another call's password does not open this one.
      await expect(
        connectRfbServer(second.stream, { password: first.rfb_password, timeoutMs: 5000 }),
      ).rejects.toMatchObject({ reason: 'auth_failed' });
      first.stream.destroy();
      await closedStream(second.stream);
    });

    it('refuses console types it lacks, naming the capability', async () => {
      const d = driver();
      const s = spec();
      await d.createVm(s, ctx());
      for (const type of ['spice', 'rdp'] as const) {
        const err = await caught(d.openConsole(s.hcp_id, type, ctx()));
        expect(err.code).toBe('FEATURE_NOT_SUPPORTED');
        expect(err.details).toEqual({ capability: 'console', console_type: type });
      }
    });

    it('answers NOT_FOUND for an unknown VM and CONFLICT for a stopped one', async () => {
      const d = driver();
      expect((await caught(d.openConsole(`vm-${randomUUID()}`, 'vnc', ctx()))).code).toBe('NOT_FOUND');
      const s = spec({ power_on: false });
      await d.createVm(s, ctx());
      const err = await caught(d.openConsole(s.hcp_id, 'vnc', ctx()));
      expect(err.code).toBe('CONFLICT');
      expect(err.details).toEqual({ power_state: 'stopped' });
    });

    it('honours injected faults like every operation', async () => {
      const d = driver({ faults: 'console=fail:PROVIDER_UNAVAILABLE' });
      const err = await caught(d.openConsole(`vm-${randomUUID()}`, 'vnc', ctx()));
      expect(err.code).toBe('PROVIDER_UNAVAILABLE');
      expect((await caught(driver().openConsole('vm-any', 'vnc', ctx(-1)))).code).toBe('PROVIDER_TIMEOUT');
    });

    it('closes the console when the VM is stopped or deleted through the driver', async () => {
      const d = driver();
      const s = spec();
      await d.createVm(s, ctx());
      const beforeStop = await d.openConsole(s.hcp_id, 'vnc', ctx());
      await readServerInit(beforeStop);
      await d.stopVm(s.hcp_id, true, ctx());
      await closedStream(beforeStop.stream);
      await d.startVm(s.hcp_id, ctx());
      const beforeDelete = await d.openConsole(s.hcp_id, 'vnc', ctx());
      await d.deleteVm(s.hcp_id, ctx());
      await closedStream(beforeDelete.stream);
      expect(d.openConsoleCount(s.hcp_id)).toBe(0);
    });

    it('closes the console when another process stops the VM', async () => {
      const d = new SimulatorDriver({
        state,
        latency: INSTANT,
        faults: SimulatorFaults.parse(''),
        clusterId: CLUSTER,
        providerId: PROVIDER,
        consoleWatchMs: 20,
      });
      const s = spec();
      await d.createVm(s, ctx());
      const console = await d.openConsole(s.hcp_id, 'vnc', ctx());
      await readServerInit(console);
      await driver().stopVm(s.hcp_id, true, ctx());
      await closedStream(console.stream);
      expect(d.openConsoleCount()).toBe(0);
    });
  });

  it('installs its schema idempotently and lists what it holds', async () => {
    await state.install();
    const s = spec();
    await driver().createVm(s, ctx());
    const all = await state.listVms();
    expect(all.filter((vm) => vm.hcp_id === s.hcp_id)).toHaveLength(1);
  });

  it('turns an unreachable state store into a retryable PROVIDER_UNAVAILABLE', async () => {
    const deadPool = new Pool({
      connectionString: 'postgres://hcp:hcp@127.0.0.1:1/none',
      connectionTimeoutMillis: 1000,
    });
    try {
      const err = await caught(driver({ on: new SimulatorState(deadPool, SCHEMA) }).describeVm('vm-x', ctx()));
      expect(err.code).toBe('PROVIDER_UNAVAILABLE');
      expect(err.retryable).toBe(true);
      expect(err.message).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
    } finally {
      await deadPool.end();
    }
  });
});
