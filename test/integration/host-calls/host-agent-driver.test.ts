/**
 * HCP's side of agent clusters on real PostgreSQL: HostAgentDriver queues host calls, an agent of the
 * test (claiming through HostCallQueue as the internal routes do) answers them. The real agent, over
 * HTTP and on real libvirt, is proven end to end in test/e2e/libvirt-agent.e2e.ts.
 */
import { randomUUID } from 'node:crypto';
import { NO_CAPABILITIES } from '@hcp/domain';
import type { ClaimedHostCall, HostCallOutcome } from '@hcp/host-protocol';
import type { CallContext, CreateVmSpec } from '@hcp/providers';
import { HostAgentDriver } from '../../../src/hosts/calls/host-agent.driver';
import { HostCallQueue } from '../../../src/hosts/calls/host-call-queue';
import { HostPlacements } from '../../../src/hosts/calls/host-placements';
import { type MigratedDatabase, migratedTestDatabase } from '../../support/migrated-database';
import { caught } from '../providers/driver-contract';

const HEARTBEAT_TIMEOUT_MS = 30_000;
const LEASE_MS = 400;

let database: MigratedDatabase;
let calls: HostCallQueue;
let placements: HostPlacements;

beforeAll(async () => {
  database = await migratedTestDatabase('host_calls', 6);
  calls = new HostCallQueue(database.ds);
  placements = new HostPlacements(database.ds);
});
afterAll(() => database.close());

function driverFor(clusterId: string, pollMs = 20): HostAgentDriver {
  return new HostAgentDriver({
    type: 'libvirt',
    providerId: 'prov-1',
    clusterId,
    capabilities: { ...NO_CAPABILITIES, console_types: ['vnc'] },
    heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS,
    pollMs,
    calls,
    placements,
  });
}

async function addHost(clusterId: string, freeRamMb: number, heartbeatAgoMs = 0, state = 'active'): Promise<string> {
  const id = randomUUID();
  await database.ds.query(
    `INSERT INTO hosts (id, cluster_id, identity, hostname, state, last_heartbeat_at, capacity)
     VALUES ($1, $2, $3, $3, $4, now() - make_interval(secs => $5::double precision / 1000), $6::jsonb)`,
    [
      id,
      clusterId,
      `host-${id.slice(0, 8)}`,
      state,
      heartbeatAgoMs,
      JSON.stringify({ vcpus: 8, ram_mb: 16384, free_ram_mb: freeRamMb }),
    ],
  );
  return id;
}

const ctx = (ms = 5_000, signal = new AbortController().signal): CallContext => ({
  deadline: new Date(Date.now() + ms),
  signal,
});

const spec = (overrides: Partial<CreateVmSpec> = {}): CreateVmSpec => ({
  hcp_id: randomUUID(),
  project_id: 'prj-1',
  name: 'vm',
  image_ref: 'base.qcow2',
  vcpus: 1,
  ram_mb: 512,
  disk_gb: 1,
  ssh_keys: [],
  tags: {},
  power_on: true,
  ...overrides,
});

const description = (hcpId: string, hostOwnRef: Record<string, unknown> = {}) => ({
  hcp_id: hcpId,
  power_state: 'running',
  addresses: [{ type: 'ipv4', address: '192.168.122.10', nic: 'net0' }],
  provider_ref: { provider_id: '', cluster_id: '', domain: `hcp-${hcpId}`, ...hostOwnRef },
});

/** Claims the host's next call (waiting up to `ms`), as the internal claim route does. */
async function claimOne(hostId: string, ms = 3_000): Promise<ClaimedHostCall> {
  const until = Date.now() + ms;
  for (;;) {
    const [call] = await calls.claim(hostId, 1, LEASE_MS);
    if (call) return call;
    if (Date.now() > until) throw new Error(`no call for host ${hostId} within ${ms} ms`);
    await calls.waitForChange(`host:${hostId}`, 50);
  }
}

describe('HostAgentDriver over host calls', () => {
  it('places a create on the online host with the most room and names that host in the description', async () => {
    const cluster = `c-${randomUUID()}`;
    await addHost(cluster, 1024);
    const roomy = await addHost(cluster, 8192);
    await addHost(cluster, 16384, HEARTBEAT_TIMEOUT_MS * 2); // offline: never chosen
    const vm = spec();
    const created = driverFor(cluster).createVm(vm, ctx());
    const call = await claimOne(roomy);
    expect(call.request).toEqual({ op: 'create', spec: { ...vm } });
    expect(call.reclaimed).toBe(false);
    await calls.report(roomy, call.call_id, { status: 'succeeded', value: description(vm.hcp_id) });
    const result = await created;
    expect(result.provider_ref).toMatchObject({ provider_id: 'prov-1', cluster_id: cluster, host_id: roomy });
    expect(result.addresses).toEqual([{ type: 'ipv4', address: '192.168.122.10', nic: 'net0' }]);
    expect(await placements.hostOf(vm.hcp_id)).toEqual({ host_id: roomy, cluster_id: cluster });
  });

  it('refuses a create when no host of the cluster is online, retryably', async () => {
    const cluster = `c-${randomUUID()}`;
    await addHost(cluster, 8192, HEARTBEAT_TIMEOUT_MS * 2);
    await addHost(cluster, 8192, 0, 'revoked');
    const error = await caught(driverFor(cluster).createVm(spec(), ctx()));
    expect(error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/no host agent of this cluster is online/);
  });

  it('passes over hosts without the memory a VM needs, counting VMs placed since their last heartbeat', async () => {
    const cluster = `c-${randomUUID()}`;
    const host = await addHost(cluster, 1024);
    const driver = driverFor(cluster);
    const first = driver.createVm(spec({ ram_mb: 768 }), ctx());
    const call = await claimOne(host);
    await calls.report(host, call.call_id, {
      status: 'succeeded',
      value: description(call.request.op === 'create' ? call.request.spec.hcp_id : ''),
    });
    await first;
    // 1024 free at the heartbeat, 768 placed since: 512 more does not fit until the next heartbeat says so.
    const error = await caught(driver.createVm(spec({ ram_mb: 512 }), ctx()));
    expect(error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(error.message).toMatch(/512 MB of memory free/);
  });

  it('sends a retried create to the host its first attempt took, even when another host has more room now', async () => {
    const cluster = `c-${randomUUID()}`;
    const first = await addHost(cluster, 4096);
    const vm = spec();
    const attempt = caught(driverFor(cluster).createVm(vm, ctx(300)));
    expect((await attempt).code).toBe('PROVIDER_UNAVAILABLE'); // nobody claimed it
    await addHost(cluster, 65536);
    const retried = driverFor(cluster).createVm(vm, ctx());
    const call = await claimOne(first);
    expect(call.request.op).toBe('create');
    await calls.report(first, call.call_id, { status: 'succeeded', value: description(vm.hcp_id) });
    expect((await retried).provider_ref.host_id).toBe(first);
  });

  it('withdraws a call nobody took by its deadline, so it never runs after newer calls about the VM', async () => {
    const cluster = `c-${randomUUID()}`;
    const host = await addHost(cluster, 4096);
    const vm = spec();
    await placements.place(vm.hcp_id, cluster, vm, HEARTBEAT_TIMEOUT_MS);
    const error = await caught(driverFor(cluster).stopVm(vm.hcp_id, false, ctx(200)));
    expect(error).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', retryable: true });
    expect(await calls.claim(host, 10, LEASE_MS)).toEqual([]);
  });

  it('ends PROVIDER_TIMEOUT when the agent took the call but did not finish it by the deadline', async () => {
    const cluster = `c-${randomUUID()}`;
    const host = await addHost(cluster, 4096);
    const vm = spec();
    await placements.place(vm.hcp_id, cluster, vm, HEARTBEAT_TIMEOUT_MS);
    const stopping = caught(driverFor(cluster).stopVm(vm.hcp_id, false, ctx(600)));
    await claimOne(host);
    expect(await stopping).toMatchObject({ code: 'PROVIDER_TIMEOUT', retryable: true });
  });

  it('gives a call whose agent died to the next claim once its lease ran out, and takes that outcome', async () => {
    const cluster = `c-${randomUUID()}`;
    const host = await addHost(cluster, 4096);
    const vm = spec();
    await placements.place(vm.hcp_id, cluster, vm, HEARTBEAT_TIMEOUT_MS);
    const starting = driverFor(cluster).startVm(vm.hcp_id, ctx(10_000));
    const first = await claimOne(host);
    expect(await calls.claim(host, 10, LEASE_MS)).toEqual([]); // held by the first claim
    const again = await claimOne(host, 5_000); // the "agent" died: no renew, no outcome
    expect(again).toMatchObject({ call_id: first.call_id, reclaimed: true });
    expect(await calls.renew(host, first.call_id, LEASE_MS)).toBe(true);
    await calls.report(host, again.call_id, { status: 'succeeded', value: description(vm.hcp_id) });
    expect((await starting).power_state).toBe('running');
  });

  it("lets no host renew, report or claim another host's call", async () => {
    const cluster = `c-${randomUUID()}`;
    const owner = await addHost(cluster, 4096);
    const other = await addHost(cluster, 1);
    const vm = spec();
    await placements.place(vm.hcp_id, cluster, vm, HEARTBEAT_TIMEOUT_MS);
    const describing = driverFor(cluster).describeVm(vm.hcp_id, ctx());
    expect(await calls.claim(other, 10, LEASE_MS)).toEqual([]);
    const call = await claimOne(owner);
    expect(await calls.renew(other, call.call_id, LEASE_MS)).toBe(false);
    const forged: HostCallOutcome = { status: 'succeeded', value: null };
    expect(await calls.report(other, call.call_id, forged)).toBe(false);
    await calls.report(owner, call.call_id, { status: 'succeeded', value: description(vm.hcp_id) });
    expect((await describing)?.hcp_id).toBe(vm.hcp_id);
  });

  it('runs calls about one VM one at a time, oldest first, while calls about other VMs go on', async () => {
    const cluster = `c-${randomUUID()}`;
    const host = await addHost(cluster, 8192);
    const [a, b] = [spec(), spec()];
    await placements.place(a.hcp_id, cluster, a, HEARTBEAT_TIMEOUT_MS);
    await placements.place(b.hcp_id, cluster, b, HEARTBEAT_TIMEOUT_MS);
    const driver = driverFor(cluster);
    const stopA = driver.stopVm(a.hcp_id, true, ctx());
    await calls.waitForChange(`host:${host}`, 50);
    const startA = driver.startVm(a.hcp_id, ctx());
    const startB = driver.startVm(b.hcp_id, ctx());
    await new Promise((r) => setTimeout(r, 100));
    const claimed = await calls.claim(host, 10, 5_000);
    expect(claimed.map((c) => c.request)).toEqual([
      { op: 'stop', hcp_id: a.hcp_id, force: true },
      { op: 'start', hcp_id: b.hcp_id },
    ]);
    for (const c of claimed) {
      const id = (c.request as { hcp_id: string }).hcp_id;
      await calls.report(host, c.call_id, {
        status: 'succeeded',
        value: { ...description(id), power_state: c.request.op === 'stop' ? 'stopped' : 'running' },
      });
    }
    await Promise.all([stopA, startB]);
    const next = await claimOne(host);
    expect(next.request).toEqual({ op: 'start', hcp_id: a.hcp_id });
    await calls.report(host, next.call_id, { status: 'succeeded', value: description(a.hcp_id) });
    await startA;
  });

  it("turns an agent's failure into the same taxonomy error and refuses an answer of the wrong shape", async () => {
    const cluster = `c-${randomUUID()}`;
    const host = await addHost(cluster, 8192);
    const vm = spec();
    await placements.place(vm.hcp_id, cluster, vm, HEARTBEAT_TIMEOUT_MS);
    const driver = driverFor(cluster);
    const rebooting = caught(driver.rebootVm(vm.hcp_id, false, ctx()));
    const call = await claimOne(host);
    await calls.report(host, call.call_id, {
      status: 'failed',
      error: { code: 'CONFLICT', message: 'the VM is not running', retryable: false },
    });
    expect(await rebooting).toMatchObject({ code: 'CONFLICT', message: 'the VM is not running', retryable: false });

    const describing = caught(driver.describeVm(vm.hcp_id, ctx()));
    const bad = await claimOne(host);
    await calls.report(host, bad.call_id, {
      status: 'succeeded',
      value: { hcp_id: vm.hcp_id, power_state: 'exploded' },
    });
    expect(await describing).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', retryable: false });
  });

  it('lists a cluster from every host holding VMs, and refuses to while one of them is offline', async () => {
    const cluster = `c-${randomUUID()}`;
    const [h1, h2] = [await addHost(cluster, 8192), await addHost(cluster, 8192)];
    const driver = driverFor(cluster);
    const listing = driver.listVms(ctx());
    const answered = await Promise.all([claimOne(h1), claimOne(h2)]);
    const vms = [randomUUID(), randomUUID()];
    await calls.report(h1, answered[0].call_id, { status: 'succeeded', value: [description(vms[0]!)] });
    await calls.report(h2, answered[1].call_id, { status: 'succeeded', value: [description(vms[1]!)] });
    const listed = await listing;
    expect(listed.map((v) => [v.hcp_id, v.provider_ref.host_id]).sort()).toEqual(
      [
        [vms[0], h1],
        [vms[1], h2],
      ].sort(),
    );

    const vm = spec();
    await placements.place(vm.hcp_id, cluster, vm, HEARTBEAT_TIMEOUT_MS);
    const holder = (await placements.hostOf(vm.hcp_id))!.host_id;
    await database.ds.query(`UPDATE hosts SET last_heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [holder]);
    const error = await caught(driver.listVms(ctx()));
    expect(error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(error.details).toEqual({ offline_hosts: [holder] });
  });

  it('deletes a VM that was never placed without asking any host, and frees the placement after a delete', async () => {
    const cluster = `c-${randomUUID()}`;
    const host = await addHost(cluster, 8192);
    const driver = driverFor(cluster);
    await driver.deleteVm(randomUUID(), ctx());
    expect(await calls.claim(host, 10, LEASE_MS)).toEqual([]);
    const vm = spec();
    await placements.place(vm.hcp_id, cluster, vm, HEARTBEAT_TIMEOUT_MS);
    const deleting = driver.deleteVm(vm.hcp_id, ctx());
    const call = await claimOne(host);
    await calls.report(host, call.call_id, { status: 'succeeded', value: null });
    await deleting;
    expect(await placements.hostOf(vm.hcp_id)).toBeNull();
  });
});
