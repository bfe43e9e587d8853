/**
 * The host credential store on real PostgreSQL: credentials are checked by their SHA-256 digest in
 * `hosts`, so what ops change (revoke, rotate) applies at the next check, in any process, and a new
 * process (a restart) knows every credential without holding any.
 */
import { randomUUID } from 'node:crypto';
import type { HcpConfig } from '../../../src/config/hcp-config';
import { HostCredentials } from '../../../src/hosts/credentials/host-credentials';
import { newHostCredential, secretDigest } from '../../../src/hosts/credentials/host-secrets';
import { HostStore } from '../../../src/hosts/host.store';
import { type MigratedDatabase, migratedTestDatabase } from '../../support/migrated-database';

const STATIC_CREDENTIAL = 'a-credential-provisioned-by-another-tool-0123456789';

let database: MigratedDatabase;
let store: HostStore;

const configWith = (staticCredentials: string) => ({ hosts: { staticCredentials } }) as unknown as HcpConfig;
/** A process of its own: nothing shared with the others but the database. */
const process = (staticCredentials = '') =>
  new HostCredentials(new HostStore(database.ds), configWith(staticCredentials));

async function enrolled(clusterId: string, identity: string): Promise<{ id: string; credential: string }> {
  const credential = newHostCredential();
  const host = await database.ds.transaction((tx) =>
    store.enroll(
      tx,
      { cluster_id: clusterId, identity, hostname: `${identity}.lab`, agent_version: null },
      randomUUID(),
      secretDigest(credential),
    ),
  );
  return { id: host.id, credential };
}

beforeAll(async () => {
  database = await migratedTestDatabase('hosts_credentials');
  store = new HostStore(database.ds);
});
afterAll(() => database.close());

it('authenticates a credential in a process that never saw it issued (after a restart)', async () => {
  const host = await enrolled('c-1', 'kvm-1');
  expect(await process().check(host.credential)).toEqual({
    ok: true,
    principal: { host_id: host.id, cluster_id: 'c-1', identity: 'kvm-1' },
  });
  expect(await process().check(`${host.credential}x`)).toEqual({ ok: false, reason: 'unknown' });
});

it('refuses a revoked host at its next check in every process', async () => {
  const host = await enrolled('c-1', 'kvm-2');
  const one = process();
  const two = process();
  expect((await one.check(host.credential)).ok).toBe(true);
  expect(await store.revoke(host.id)).toBe(true);
  expect(await one.check(host.credential)).toEqual({ ok: false, reason: 'revoked' });
  expect(await two.check(host.credential)).toEqual({ ok: false, reason: 'revoked' });
  expect(await store.revoke(host.id)).toBe(false);
});

it('refuses the old credential once rotated, and accepts the new one', async () => {
  const host = await enrolled('c-1', 'kvm-3');
  const next = newHostCredential();
  expect(await store.rotate(host.id, secretDigest(next))).toBe(true);
  expect(await process().check(host.credential)).toEqual({ ok: false, reason: 'unknown' });
  expect((await process().check(next)).ok).toBe(true);
});

it('enrolls the same host again under the same id with only the new credential', async () => {
  const first = await enrolled('c-2', 'kvm-again');
  await store.revoke(first.id);
  const second = await enrolled('c-2', 'kvm-again');
  expect(second.id).toBe(first.id);
  expect(await process().check(first.credential)).toEqual({ ok: false, reason: 'unknown' });
  expect(await process().check(second.credential)).toMatchObject({ ok: true, principal: { host_id: first.id } });
  expect((await store.find(first.id))?.state).toBe('active');
});

it('lets no two hosts share a credential digest (unique index)', async () => {
  const host = await enrolled('c-3', 'kvm-a');
  await expect(
    database.ds.query(
      `INSERT INTO hosts (id, cluster_id, identity, hostname, credential_digest) VALUES ($1, 'c-3', 'kvm-b', 'b', $2)`,
      [randomUUID(), secretDigest(host.credential)],
    ),
  ).rejects.toMatchObject({ code: '23505' });
});

it('makes the row of a configured host at its first check; revoked, it stays revoked, and it is never rotated', async () => {
  const configured = `c-4/pxe-1=sha256:${secretDigest(STATIC_CREDENTIAL)}`;
  expect(await store.list('c-4')).toEqual([]);
  const first = await process(configured).check(STATIC_CREDENTIAL);
  expect(first).toMatchObject({ ok: true, principal: { cluster_id: 'c-4', identity: 'pxe-1' } });
  const [row] = await store.list('c-4');
  expect(row).toMatchObject({ identity: 'pxe-1', state: 'active', enrolled_with: 'static' });
  expect(await process(configured).check(STATIC_CREDENTIAL)).toEqual(first);

  expect(await store.rotate(row!.id, secretDigest(newHostCredential()))).toBe(false);
  await store.revoke(row!.id);
  expect(await process(configured).check(STATIC_CREDENTIAL)).toEqual({ ok: false, reason: 'revoked' });
  // Not configured in this process: the digest alone is not enough to make a host.
  expect(await process().check('another-unconfigured-credential')).toEqual({ ok: false, reason: 'unknown' });
});

it('lists as live only active hosts with a capacity and a recent heartbeat', async () => {
  const online = await enrolled('c-5', 'up');
  const silent = await enrolled('c-5', 'silent');
  const revoked = await enrolled('c-5', 'revoked');
  const beat = { capacity: { vcpus: 4, ram_mb: 8192, free_ram_mb: 4096 }, driver: 'libvirt', capabilities: {} };
  expect(await store.recordHeartbeat(online.id, beat)).toBe(true);
  expect(await store.recordHeartbeat(revoked.id, beat)).toBe(true);
  await store.revoke(revoked.id);
  expect(await store.recordHeartbeat(revoked.id, beat)).toBe(false);
  const live = await store.live('c-5', 60_000);
  expect(live.map((h) => h.id)).toEqual([online.id]);
  expect(live[0]!.capacity).toEqual(beat.capacity);
  expect(silent.id).not.toBe(online.id);
  expect(await store.live('c-5', 0)).toEqual([]);
});
