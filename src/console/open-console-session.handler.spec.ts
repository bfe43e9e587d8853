import { createHash } from 'node:crypto';
import { consoleSessionStreamId, createHcpUpcasters } from '@hcp/domain';
import { DomainEventCodec, InMemoryEventStore } from '@hcp/eventstore';
import { FakeClusterCapabilities } from '../../test/fakes/fake-cluster-capabilities';
import { appendedAfter, GIVEN_PLACEMENT, givenVm, refusal } from '../../test/fakes/vm-histories';
import { loadConfig } from '../config/hcp-config';
import { VmRepository } from '../vms';
import { ConsoleSessionRepository } from './console-session.repository';
import {
  consoleTokenDigest,
  OpenConsoleSessionCommand,
  OpenConsoleSessionHandler,
} from './open-console-session.handler';

const ALICE = { actor: 'user:alice', traceId: 'trace-console' };
const THE_CLUSTER = { provider_id: GIVEN_PLACEMENT.provider_id, cluster_id: GIVEN_PLACEMENT.cluster_id };
const ORIGIN = 'https://api.internal:8443';

function setup(
  env: NodeJS.ProcessEnv = {
    HCP_CONSOLE_CONNECT_TIMEOUT_S: '90',
    HCP_CONSOLE_MAX_SESSION_S: '3600',
    HCP_PUBLIC_URL: 'https://hcp.example.com',
  },
) {
  const store = new InMemoryEventStore();
  const codec = new DomainEventCodec(createHcpUpcasters());
  const vms = new VmRepository(store, codec);
  const sessions = new ConsoleSessionRepository(store, codec);
  const clusters = new FakeClusterCapabilities().offer(THE_CLUSTER.provider_id, THE_CLUSTER.cluster_id, {
    console_types: ['vnc', 'webconsole'],
  });
  const handler = new OpenConsoleSessionHandler(vms, sessions, clusters, loadConfig(env));
  const appendedSince = (position: bigint) => appendedAfter(store, codec, position);
  return { store, vms, sessions, clusters, handler, appendedSince };
}

describe('OpenConsoleSessionHandler', () => {
  it('opens a webconsole session for a running VM and stores only the digest of its token', async () => {
    const { store, vms, sessions, clusters, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    const view = await handler.execute(new OpenConsoleSessionCommand('p1', vm.vm_id, 'webconsole', ORIGIN, ALICE));

    const { session_id: sessionId, token } = view;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/); // 32 random bytes, base64url
    expect(view).toEqual({
      session_id: sessionId,
      type: 'webconsole',
      url: `https://hcp.example.com/console/${sessionId}#token=${token}`,
      token,
      expires_at: expect.any(String),
    });
    const digest = createHash('sha256').update(token, 'utf8').digest('hex');
    expect(consoleTokenDigest(token)).toBe(digest);
    const appended = await appendedSince(before);
    expect(appended.map((e) => [e.streamId, e.event.type, e.event.data])).toEqual([
      [
        consoleSessionStreamId(sessionId),
        'ConsoleSessionOpened',
        {
          session_id: sessionId,
          project_id: 'p1',
          vm_id: vm.vm_id,
          type: 'webconsole',
          token_sha256: digest,
          connect_by: view.expires_at,
          max_duration_ms: 3_600_000,
          opened_by: 'user:alice',
        },
      ],
    ]);
    expect(appended[0].context).toMatchObject({ actor: 'user:alice', trace_id: 'trace-console' });
    // The token waits for its one connection for the configured time, counted from when the session was opened.
    expect(Date.parse(view.expires_at) - Date.parse(appended[0].at)).toBe(90_000);
    // The token itself is nowhere in the store.
    expect(
      JSON.stringify(await store.readAll('start', 10_000), (_k, v: unknown) =>
        typeof v === 'bigint' ? v.toString() : v,
      ),
    ).not.toContain(token);
    expect((await sessions.load(sessionId)).state).toMatchObject({
      status: 'awaiting_connection',
      vm_id: vm.vm_id,
      token_sha256: digest,
    });
    expect(clusters.asked).toEqual([THE_CLUSTER]);
  });

  it('answers a websocket URL at the request origin when no public URL is configured and its host is allowed, without the token in it', async () => {
    const { vms, handler } = setup({ HCP_ALLOWED_HOSTS: 'api.internal' });
    const vm = await givenVm(vms, 'running');

    const view = await handler.execute(new OpenConsoleSessionCommand('p1', vm.vm_id, 'vnc', ORIGIN, ALICE));

    expect(view.type).toBe('vnc');
    expect(view.url).toBe(`wss://api.internal:8443/v1/console/${view.session_id}/websocket`);
    expect(view.url).not.toContain(view.token);
  });

  it.each([
    'http://evil.example/x?',
    'http://evil.example',
    'http://localhost@evil.example',
    'http://localhost:8080/x',
  ])(
    'refuses to build a console URL from a Host HCP does not hand URLs out for (%s): INVALID_REQUEST, nothing stored',
    async (requestOrigin) => {
      const { store, vms, handler, appendedSince } = setup({});
      const vm = await givenVm(vms, 'running');
      const before = await store.headPosition();

      const error = await refusal(
        handler.execute(new OpenConsoleSessionCommand('p1', vm.vm_id, 'vnc', requestOrigin, ALICE)),
      );

      expect(error.code).toBe('INVALID_REQUEST');
      expect(JSON.stringify(error.toShape())).not.toContain('evil');
      expect(await appendedSince(before)).toEqual([]);
    },
  );

  it('answers at a loopback Host in dev mode by default, on any port', async () => {
    const { vms, handler } = setup({});
    const vm = await givenVm(vms, 'running');

    const view = await handler.execute(
      new OpenConsoleSessionCommand('p1', vm.vm_id, 'webconsole', 'http://127.0.0.1:41234', ALICE),
    );

    expect(view.url).toBe(`http://127.0.0.1:41234/console/${view.session_id}#token=${view.token}`);
  });

  it('gives every session its own id and token', async () => {
    const { vms, handler } = setup();
    const vm = await givenVm(vms, 'running');

    const first = await handler.execute(new OpenConsoleSessionCommand('p1', vm.vm_id, 'vnc', ORIGIN, ALICE));
    const second = await handler.execute(new OpenConsoleSessionCommand('p1', vm.vm_id, 'vnc', ORIGIN, ALICE));

    expect(second.session_id).not.toBe(first.session_id);
    expect(second.token).not.toBe(first.token);
  });

  it('refuses a console type the zone does not offer: FEATURE_NOT_SUPPORTED naming it, nothing stored', async () => {
    const { store, vms, handler, appendedSince } = setup();
    const vm = await givenVm(vms, 'running');
    const before = await store.headPosition();

    const error = await refusal(handler.execute(new OpenConsoleSessionCommand('p1', vm.vm_id, 'spice', ORIGIN, ALICE)));

    expect(error.code).toBe('FEATURE_NOT_SUPPORTED');
    expect(error.details).toEqual({ missing: ['console:spice'] });
    expect(await appendedSince(before)).toEqual([]);
  });

  it('refuses a console of a VM that is not running with CONFLICT naming its status, nothing stored', async () => {
    const { store, vms, handler, appendedSince } = setup();
    const stopped = await givenVm(vms, 'stopped');
    const provisioning = await givenVm(vms, 'provisioning');
    const before = await store.headPosition();

    const whileStopped = await refusal(
      handler.execute(new OpenConsoleSessionCommand('p1', stopped.vm_id, 'vnc', ORIGIN, ALICE)),
    );
    const whileProvisioning = await refusal(
      handler.execute(new OpenConsoleSessionCommand('p1', provisioning.vm_id, 'vnc', ORIGIN, ALICE)),
    );

    expect([whileStopped.code, whileStopped.details]).toEqual(['CONFLICT', { status: 'stopped' }]);
    expect([whileProvisioning.code, whileProvisioning.details]).toEqual(['CONFLICT', { status: 'provisioning' }]);
    expect(await appendedSince(before)).toEqual([]);
  });

  it("answers NOT_FOUND for another project's VM, a deleted VM and one that never existed, without asking the cluster", async () => {
    const { store, vms, clusters, handler, appendedSince } = setup();
    const foreign = await givenVm(vms, 'running', { project_id: 'p2' });
    const deleted = await givenVm(vms, 'deleted');
    const before = await store.headPosition();

    for (const vmId of [foreign.vm_id, deleted.vm_id, 'f5b3c1de-0000-4000-8000-000000000000']) {
      expect(
        (await refusal(handler.execute(new OpenConsoleSessionCommand('p1', vmId, 'vnc', ORIGIN, ALICE)))).code,
      ).toBe('NOT_FOUND');
    }
    expect(clusters.asked).toEqual([]);
    expect(await appendedSince(before)).toEqual([]);
  });
});
