/**
 * The driver contract: what every ProviderDriver must do, whatever the hypervisor. Each driver's test
 * file calls `describeDriverContract` with a harness that builds the driver against its provider (or
 * the provider's simulator) and knows how to make that provider fail.
 */
import { randomUUID } from 'node:crypto';
import { HcpError } from '@hcp/domain';
import type { Duplex } from 'node:stream';
import {
  StreamByteReader,
  connectRfbServer,
  type CallContext,
  type CreateVmSpec,
  type ProviderConsole,
  type ProviderDriver,
} from '@hcp/providers';

export interface DriverContractHarness {
  /** The driver under test. Read it at each call: fault injection may swap it. */
  readonly driver: ProviderDriver;
  /** A create spec this provider can fulfil (image_ref of an existing template, ...). */
  spec(overrides?: Partial<CreateVmSpec>): CreateVmSpec;
  /** From now on the provider refuses service (5xx, unreachable): calls must fail PROVIDER_UNAVAILABLE. */
  injectUnavailable(): Promise<void>;
  /** From now on the provider does not answer: calls must end PROVIDER_TIMEOUT at their deadline. */
  injectHang(): Promise<void>;
  clearFaults(): Promise<void>;
  /** How many VMs the provider holds for this HCP id. */
  countVms(hcpId: string): Promise<number>;
  /** A deadline comfortably long for one operation on this provider. */
  readonly opTimeoutMs: number;
  close(): Promise<void>;
}

export function ctx(ms: number, signal: AbortSignal = new AbortController().signal): CallContext {
  return { deadline: new Date(Date.now() + ms), signal };
}

export async function caught(promise: Promise<unknown>): Promise<HcpError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof HcpError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

/** Completes the RFB handshake with the console's password, sends ClientInit and reads ServerInit. */
export async function readServerInit(
  console: ProviderConsole,
): Promise<{ width: number; height: number; name: string }> {
  await connectRfbServer(console.stream, { password: console.rfb_password, timeoutMs: 10_000 });
  const reader = new StreamByteReader(console.stream);
  console.stream.write(Buffer.from([1]));
  const init = await reader.read(24);
  const name = (await reader.read(init.readUInt32BE(20))).toString('utf8');
  reader.release();
  return { width: init.readUInt16BE(0), height: init.readUInt16BE(2), name };
}

/** Resolves when the stream ends or closes (reading whatever still arrives); websocket streams emit no 'close'. */
export function closedStream(stream: Duplex): Promise<void> {
  if (stream.destroyed || stream.readableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('end', () => resolve());
    stream.once('close', () => resolve());
    stream.on('error', () => undefined);
    stream.resume();
  });
}

export function describeDriverContract(name: string, setup: () => Promise<DriverContractHarness>): void {
  describe(`driver contract: ${name}`, () => {
    let h: DriverContractHarness;
    const op = () => ctx(h.opTimeoutMs);

    beforeAll(async () => {
      h = await setup();
    });

    afterEach(async () => {
      await h.clearFaults();
    });

    afterAll(async () => {
      await h?.close();
    });

    it('declares well-formed capabilities', () => {
      const caps = h.driver.capabilities();
      expect(typeof h.driver.type).toBe('string');
      expect(Array.isArray(caps.console_types)).toBe(true);
      for (const key of [
        'reboot',
        'graceful_stop',
        'snapshots',
        'resize',
        'guest_agent_addresses',
        'provider_tags',
      ] as const) {
        expect(typeof caps[key]).toBe('boolean');
      }
      // A copy: callers may narrow it without changing the driver.
      caps.console_types.push('rdp');
      expect(h.driver.capabilities().console_types).not.toEqual(caps.console_types);
    });

    it('runs the whole lifecycle: create running, describe, stop, start, reboot, delete', async () => {
      const spec = h.spec();
      const created = await h.driver.createVm(spec, op());
      expect(created.hcp_id).toBe(spec.hcp_id);
      expect(created.power_state).toBe('running');
      expect(created.provider_ref).toEqual(
        expect.objectContaining({ provider_id: expect.any(String), cluster_id: expect.any(String) }),
      );

      const described = await h.driver.describeVm(spec.hcp_id, op());
      expect(described).toMatchObject({ hcp_id: spec.hcp_id, power_state: 'running' });
      expect(described!.provider_ref).toEqual(created.provider_ref);

      const stopped = await h.driver.stopVm(spec.hcp_id, false, op());
      expect(stopped.power_state).toBe('stopped');
      expect(stopped.addresses).toEqual([]);
      expect((await h.driver.describeVm(spec.hcp_id, op()))!.power_state).toBe('stopped');

      const started = await h.driver.startVm(spec.hcp_id, op());
      expect(started.power_state).toBe('running');

      const rebooted = await h.driver.rebootVm(spec.hcp_id, false, op());
      expect(rebooted.power_state).toBe('running');

      const forced = await h.driver.stopVm(spec.hcp_id, true, op());
      expect(forced.power_state).toBe('stopped');

      await h.driver.deleteVm(spec.hcp_id, op());
      expect(await h.driver.describeVm(spec.hcp_id, op())).toBeNull();
      expect(await h.countVms(spec.hcp_id)).toBe(0);
    });

    it('creates a stopped VM when power_on is false', async () => {
      const spec = h.spec({ power_on: false });
      const vm = await h.driver.createVm(spec, op());
      expect(vm.power_state).toBe('stopped');
      expect((await h.driver.describeVm(spec.hcp_id, op()))!.power_state).toBe('stopped');
      await h.driver.deleteVm(spec.hcp_id, op());
    });

    it('makes one VM from a create that is repeated', async () => {
      const spec = h.spec();
      const first = await h.driver.createVm(spec, op());
      const second = await h.driver.createVm(spec, op());
      expect(second.provider_ref).toEqual(first.provider_ref);
      expect(second.power_state).toBe('running');
      expect(await h.countVms(spec.hcp_id)).toBe(1);
      await h.driver.deleteVm(spec.hcp_id, op());
    });

    it('makes one VM from two concurrent creates', async () => {
      const spec = h.spec({ power_on: false });
      const [a, b] = await Promise.all([h.driver.createVm(spec, op()), h.driver.createVm(spec, op())]);
      expect(a.provider_ref).toEqual(b.provider_ref);
      expect(await h.countVms(spec.hcp_id)).toBe(1);
      await h.driver.deleteVm(spec.hcp_id, op());
    });

    it('succeeds deleting a VM that does not exist, and deleting twice', async () => {
      await h.driver.deleteVm(`vm-${randomUUID()}`, op());
      const spec = h.spec({ power_on: false });
      await h.driver.createVm(spec, op());
      await h.driver.deleteVm(spec.hcp_id, op());
      await h.driver.deleteVm(spec.hcp_id, op());
      expect(await h.countVms(spec.hcp_id)).toBe(0);
    });

    it('deletes a running VM', async () => {
      const spec = h.spec();
      await h.driver.createVm(spec, op());
      await h.driver.deleteVm(spec.hcp_id, op());
      expect(await h.driver.describeVm(spec.hcp_id, op())).toBeNull();
    });

    it('succeeds starting a running VM and stopping a stopped one', async () => {
      const spec = h.spec();
      await h.driver.createVm(spec, op());
      expect((await h.driver.startVm(spec.hcp_id, op())).power_state).toBe('running');
      await h.driver.stopVm(spec.hcp_id, false, op());
      expect((await h.driver.stopVm(spec.hcp_id, false, op())).power_state).toBe('stopped');
      expect((await h.driver.stopVm(spec.hcp_id, true, op())).power_state).toBe('stopped');
      await h.driver.deleteVm(spec.hcp_id, op());
    });

    it('refuses to reboot a stopped VM with CONFLICT', async () => {
      const spec = h.spec({ power_on: false });
      await h.driver.createVm(spec, op());
      const err = await caught(h.driver.rebootVm(spec.hcp_id, false, op()));
      expect(err.code).toBe('CONFLICT');
      await h.driver.deleteVm(spec.hcp_id, op());
    });

    it('answers NOT_FOUND for power operations on an unknown VM, and null for describe', async () => {
      const id = `vm-${randomUUID()}`;
      expect((await caught(h.driver.startVm(id, op()))).code).toBe('NOT_FOUND');
      expect((await caught(h.driver.stopVm(id, false, op()))).code).toBe('NOT_FOUND');
      expect((await caught(h.driver.rebootVm(id, false, op()))).code).toBe('NOT_FOUND');
      expect(await h.driver.describeVm(id, op())).toBeNull();
    });

    it('opens a console to a running VM that speaks RFB and accepts the password it came with', async () => {
      const type = h.driver.capabilities().console_types.find((t) => t === 'vnc' || t === 'webconsole');
      const spec = h.spec();
      await h.driver.createVm(spec, op());
      if (!type) {
        expect((await caught(h.driver.openConsole(spec.hcp_id, 'vnc', op()))).code).toBe('FEATURE_NOT_SUPPORTED');
      } else {
        const console = await h.driver.openConsole(spec.hcp_id, type, op());
        expect(console.protocol).toBe('rfb');
        const init = await readServerInit(console);
        expect(init.width).toBeGreaterThan(0);
        expect(init.height).toBeGreaterThan(0);
        console.stream.destroy();
      }
      await h.driver.deleteVm(spec.hcp_id, op());
    });

    it('refuses a console to a stopped VM with CONFLICT and to an unknown one with NOT_FOUND', async () => {
      const type = h.driver.capabilities().console_types[0];
      if (!type) return;
      const spec = h.spec({ power_on: false });
      await h.driver.createVm(spec, op());
      expect((await caught(h.driver.openConsole(spec.hcp_id, type, op()))).code).toBe('CONFLICT');
      expect((await caught(h.driver.openConsole(`vm-${randomUUID()}`, type, op()))).code).toBe('NOT_FOUND');
      await h.driver.deleteVm(spec.hcp_id, op());
    });

    it('refuses a call whose deadline has passed with PROVIDER_TIMEOUT', async () => {
      const err = await caught(h.driver.createVm(h.spec(), ctx(-1)));
      expect(err.code).toBe('PROVIDER_TIMEOUT');
      expect(err.retryable).toBe(true);
      expect((await caught(h.driver.describeVm(`vm-${randomUUID()}`, ctx(-1)))).code).toBe('PROVIDER_TIMEOUT');
    });

    it('refuses an aborted call with PROVIDER_TIMEOUT', async () => {
      const controller = new AbortController();
      controller.abort();
      const err = await caught(h.driver.startVm(`vm-${randomUUID()}`, ctx(h.opTimeoutMs, controller.signal)));
      expect(err.code).toBe('PROVIDER_TIMEOUT');
    });

    it('ends a call to a provider that does not answer with PROVIDER_TIMEOUT at its deadline', async () => {
      await h.injectHang();
      const started = Date.now();
      const err = await caught(h.driver.describeVm(`vm-${randomUUID()}`, ctx(400)));
      expect(err.code).toBe('PROVIDER_TIMEOUT');
      expect(err.retryable).toBe(true);
      expect(Date.now() - started).toBeGreaterThanOrEqual(350);
      expect(Date.now() - started).toBeLessThan(3000);
    });

    it('stops waiting on a provider that does not answer as soon as the call is aborted', async () => {
      await h.injectHang();
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      const started = Date.now();
      const err = await caught(h.driver.createVm(h.spec(), ctx(60_000, controller.signal)));
      expect(err.code).toBe('PROVIDER_TIMEOUT');
      expect(Date.now() - started).toBeLessThan(3000);
    });

    it('lists every VM of its cluster with its HCP id, power state and addresses, and no deleted one', async () => {
      if (!h.driver.listVms) return;
      const running = h.spec();
      const stopped = h.spec({ power_on: false });
      const gone = h.spec({ power_on: false });
      await Promise.all([running, stopped, gone].map((s) => h.driver.createVm(s, op())));
      await h.driver.deleteVm(gone.hcp_id, op());

      const listed = await h.driver.listVms(op());
      const byId = new Map(listed.map((d) => [d.hcp_id, d]));
      const described = await h.driver.describeVm(running.hcp_id, op());
      expect(byId.get(running.hcp_id)).toMatchObject({
        power_state: 'running',
        addresses: described!.addresses,
        provider_ref: described!.provider_ref,
      });
      expect(byId.get(stopped.hcp_id)).toMatchObject({ power_state: 'stopped', addresses: [] });
      expect(byId.has(gone.hcp_id)).toBe(false);
      expect(listed.filter((d) => d.hcp_id === running.hcp_id)).toHaveLength(1);
      await Promise.all([running, stopped].map((s) => h.driver.deleteVm(s.hcp_id, op())));
    });

    it('writes tags that describe and the listing read back, and answers NOT_FOUND for an unknown VM', async () => {
      if (!h.driver.updateTags) return;
      expect(h.driver.capabilities().provider_tags).toBe(true);
      const spec = h.spec({ power_on: false, tags: { env: 'dev' } });
      await h.driver.createVm(spec, op());
      const tags = { env: 'prod', 'team name': 'Blue Ops', empty: '' };
      await h.driver.updateTags(spec.hcp_id, tags, op());
      expect((await h.driver.describeVm(spec.hcp_id, op()))!.tags).toEqual(tags);
      if (h.driver.listVms) {
        const listed = (await h.driver.listVms(op())).find((d) => d.hcp_id === spec.hcp_id);
        expect(listed!.tags).toEqual(tags);
      }
      // Writing the same tags again is a no-op that succeeds; an empty set clears them.
      await h.driver.updateTags(spec.hcp_id, tags, op());
      await h.driver.updateTags(spec.hcp_id, {}, op());
      expect((await h.driver.describeVm(spec.hcp_id, op()))!.tags).toEqual({});
      // The VM is still found by its HCP id after its tags changed.
      expect(await h.countVms(spec.hcp_id)).toBe(1);
      await h.driver.deleteVm(spec.hcp_id, op());
      expect((await caught(h.driver.updateTags(spec.hcp_id, tags, op()))).code).toBe('NOT_FOUND');
    });

    it('fails with a retryable PROVIDER_UNAVAILABLE while the provider refuses service, and recovers', async () => {
      const spec = h.spec({ power_on: false });
      await h.injectUnavailable();
      for (const call of [
        () => h.driver.createVm(spec, op()),
        () => h.driver.describeVm(spec.hcp_id, op()),
        () => h.driver.startVm(spec.hcp_id, op()),
        () => h.driver.deleteVm(spec.hcp_id, op()),
      ]) {
        const err = await caught(call());
        expect(err.code).toBe('PROVIDER_UNAVAILABLE');
        expect(err.retryable).toBe(true);
      }
      await h.clearFaults();
      const vm = await h.driver.createVm(spec, op());
      expect(vm.power_state).toBe('stopped');
      expect(await h.countVms(spec.hcp_id)).toBe(1);
      await h.driver.deleteVm(spec.hcp_id, op());
    });
  });
}
