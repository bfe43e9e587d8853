/**
 * Host agents' admission, against real HCP processes: ops create a bootstrap token for an agent cluster,
 * a host enrolls with it once and gets its own credential, heartbeats with it, and ops list, revoke and
 * rotate it. The internal router and the public API accept nothing of each other's, the internal router
 * can live on a port of its own, and configured (static) credentials work. No token or credential ever
 * reaches the logs or the audit trail.
 */
import { createHash } from 'node:crypto';
import { INTERNAL_ROUTES } from '@hcp/host-protocol';
import { ApiClient, eventually } from '../support/api-client';
import { freePort, HcpProcess } from '../support/hcp-process';
import { createTestDatabase, queryDatabase, type TestDatabase } from '../support/test-database';

jest.setTimeout(180_000);

const heartbeat = (free_ram_mb: number) => ({
  capacity: { vcpus: 8, ram_mb: 16_384, free_ram_mb },
  driver: 'libvirt',
  capabilities: { console: ['vnc'] },
  agent_version: '0.1.0',
  guests: 2,
});
const enrollBody = (token: string, identity: string) => ({
  token,
  identity,
  hostname: `${identity}.lab`,
  agent_version: '0.1.0',
});

let db: TestDatabase;
let hcp: HcpProcess;
let infra: ApiClient;
let auditor: ApiClient;
let anonymous: ApiClient;
const secrets: string[] = [];
const ids = { provider: '', cluster: '', simCluster: '', host: '' };
/** The second process's output, kept after it stops for the check that no secret was logged. */
let otherLogs = '';

/** A host's view of the internal router: its credential as bearer. */
const asHost = (credential: string, base = hcp.baseUrl) => new ApiClient(base, credential);

async function newToken(): Promise<string> {
  const res = await infra.post(`/v1/ops/clusters/${ids.cluster}/enrollments`, {});
  expect(res.status).toBe(201);
  secrets.push(res.body.token);
  return res.body.token;
}

async function enroll(token: string, identity: string, base = hcp.baseUrl) {
  const res = await new ApiClient(base).post(INTERNAL_ROUTES.enroll, enrollBody(token, identity));
  if (res.status === 201) secrets.push(res.body.credential);
  return res;
}

beforeAll(async () => {
  db = await createTestDatabase();
  hcp = await HcpProcess.start({
    databaseUrl: db.url,
    // Debug logs: the most HCP ever writes, so the check that no secret is logged covers the most.
    env: {
      LOG_LEVEL: 'debug',
      HCP_RECONCILE_INTERVAL_MS: '0',
      HCP_SIMULATOR_LATENCY_SCALE: '0',
      // A revoked host shows offline once its last heartbeat is this old, and the gauge counts it at its next
      // run (every 15 s): at the default 30 s the two took up to 45 s, past the metrics test's 40 s wait.
      HCP_HOST_HEARTBEAT_TIMEOUT_MS: '10000',
    },
  });
  infra = new ApiClient(hcp.baseUrl, hcp.token('ingrid', {}, ['infra-admin']));
  auditor = new ApiClient(hcp.baseUrl, hcp.token('aude', {}, ['security-auditor']));
  anonymous = new ApiClient(hcp.baseUrl);
  const provider = await infra.post('/v1/ops/providers', { name: 'kvm', type: 'libvirt', settings: {} });
  expect(provider.status).toBe(201);
  ids.provider = provider.body.id;
  const cluster = await infra.post('/v1/ops/clusters', { name: 'kvm-rack', provider_id: ids.provider });
  expect(cluster.status).toBe(201);
  ids.cluster = cluster.body.id;
  const sim = await infra.post('/v1/ops/providers', { name: 'sim', type: 'simulator', settings: {} });
  const simCluster = await infra.post('/v1/ops/clusters', { name: 'sim-rack', provider_id: sim.body.id });
  ids.simCluster = simCluster.body.id;
}, 180_000);

afterAll(async () => {
  await hcp?.stop();
  hcp?.removeDataDir();
  await db?.drop();
});

describe('enrollment tokens', () => {
  it('creates a token shown once, expiring in 15 minutes unless asked otherwise', async () => {
    const res = await infra.post(`/v1/ops/clusters/${ids.cluster}/enrollments`, {});
    expect(res.status).toBe(201);
    secrets.push(res.body.token);
    expect(res.body).toEqual({
      id: expect.any(String),
      cluster_id: ids.cluster,
      token: expect.stringMatching(/^hcpb_[A-Za-z0-9_-]{43}$/),
      expires_at: expect.any(String),
    });
    const ttlMs = Date.parse(res.body.expires_at) - Date.now();
    expect(ttlMs).toBeGreaterThan(13 * 60_000);
    expect(ttlMs).toBeLessThanOrEqual(15 * 60_000 + 5_000);
    const [row] = await queryDatabase<{ token_digest: string }>(
      db.url,
      `SELECT token_digest FROM host_enrollments WHERE id = $1`,
      [res.body.id],
    );
    expect(row!.token_digest).toBe(createHash('sha256').update(res.body.token).digest('hex'));
  });

  it('refuses a cluster that does not exist, one whose provider runs no agents, and a lifetime over 24 h', async () => {
    expect((await infra.post('/v1/ops/clusters/no-such-cluster/enrollments', {})).status).toBe(404);
    const sim = await infra.post(`/v1/ops/clusters/${ids.simCluster}/enrollments`, {});
    expect(sim.status).toBe(422);
    expect(sim.body.error.code).toBe('FEATURE_NOT_SUPPORTED');
    const long = await infra.post(`/v1/ops/clusters/${ids.cluster}/enrollments`, { expires_in_s: 86_401 });
    expect(long.status).toBe(400);
    expect(long.body.error.code).toBe('INVALID_REQUEST');
  });

  it('is for infra-admins only', async () => {
    const operator = new ApiClient(hcp.baseUrl, hcp.token('olga', {}, ['cloud-operator']));
    expect((await operator.post(`/v1/ops/clusters/${ids.cluster}/enrollments`, {})).status).toBe(403);
    expect((await anonymous.post(`/v1/ops/clusters/${ids.cluster}/enrollments`, {})).status).toBe(401);
  });
});

describe('enrollment', () => {
  it('enrolls a host once per token; a retry by the same host gets the same host and ends the first credential', async () => {
    const token = await newToken();
    const first = await enroll(token, 'kvm-1');
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      host_id: expect.any(String),
      cluster_id: ids.cluster,
      credential: expect.stringMatching(/^hcph_[A-Za-z0-9_-]{43}$/),
    });
    ids.host = first.body.host_id;

    const other = await enroll(token, 'kvm-2');
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('CONFLICT');

    const again = await enroll(token, 'kvm-1');
    expect(again.status).toBe(201);
    expect(again.body.host_id).toBe(ids.host);
    expect(again.body.credential).not.toBe(first.body.credential);
    expect((await asHost(first.body.credential).post(INTERNAL_ROUTES.heartbeat, heartbeat(1000))).status).toBe(401);
    expect((await asHost(again.body.credential).post(INTERNAL_ROUTES.heartbeat, heartbeat(1000))).status).toBe(204);
  });

  it('refuses an unknown token and an expired one, saying which', async () => {
    const unknown = await enroll('hcpb_not-a-token', 'kvm-3');
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'the enrollment token is not valid' });

    const token = await newToken();
    await queryDatabase(
      db.url,
      `UPDATE host_enrollments SET expires_at = now() - interval '1 second' WHERE token_digest = $1`,
      [createHash('sha256').update(token).digest('hex')],
    );
    const expired = await enroll(token, 'kvm-3');
    expect(expired.status).toBe(401);
    expect(expired.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'the enrollment token has expired' });
  });

  it('refuses a body the host protocol does not allow, in the error envelope', async () => {
    const res = await anonymous.post(INTERNAL_ROUTES.enroll, { token: 'hcpb_x', identity: '' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
  });
});

describe('heartbeats and the ops view of hosts', () => {
  let credential = '';

  beforeAll(async () => {
    credential = (await enroll(await newToken(), 'kvm-online')).body.credential;
  });

  it('shows a host that sends heartbeats online, with its capacity', async () => {
    const beat = await asHost(credential).post(INTERNAL_ROUTES.heartbeat, heartbeat(12_000));
    expect(beat.status).toBe(204);
    const list = await infra.get(`/v1/ops/hosts?cluster_id=${ids.cluster}`);
    expect(list.status).toBe(200);
    const host = (list.body.items as Array<{ identity: string }>).find((h) => h.identity === 'kvm-online');
    expect(host).toMatchObject({
      cluster_id: ids.cluster,
      hostname: 'kvm-online.lab',
      state: 'active',
      online: true,
      capacity: { vcpus: 8, ram_mb: 16_384, free_ram_mb: 12_000 },
      capabilities: { console: ['vnc'] },
      driver: 'libvirt',
      agent_version: '0.1.0',
      guests: 2,
      credential_source: 'enrolled',
    });
    expect(JSON.stringify(list.body)).not.toMatch(/digest|hcph_/);
  });

  it('refuses a heartbeat the host protocol does not allow', async () => {
    const res = await asHost(credential).post(INTERNAL_ROUTES.heartbeat, { driver: 'libvirt' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'capacity' } });
  });

  it('rotates a credential: the old one is refused at once, the new one works', async () => {
    const hostId = (await infra.get(`/v1/ops/hosts?cluster_id=${ids.cluster}`)).body.items.find(
      (h: { identity: string }) => h.identity === 'kvm-online',
    ).id;
    const rotated = await infra.post(`/v1/ops/hosts/${hostId}/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.credential).toMatch(/^hcph_/);
    secrets.push(rotated.body.credential);
    expect((await asHost(credential).post(INTERNAL_ROUTES.heartbeat, heartbeat(1))).status).toBe(401);
    expect((await asHost(rotated.body.credential).post(INTERNAL_ROUTES.heartbeat, heartbeat(1))).status).toBe(204);
    credential = rotated.body.credential;
  });

  it('revokes a host: its next heartbeat is refused, and it shows revoked and offline', async () => {
    const revoked = await infra.post(`/v1/ops/hosts/${ids.host}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: ids.host, state: 'revoked', online: false });
    const [row] = await queryDatabase<{ credential_digest: string }>(
      db.url,
      `SELECT credential_digest FROM hosts WHERE id = $1`,
      [ids.host],
    );
    // The live credential of the revoked host is the one enrolled last (see the retried enrollment).
    const liveCredential = secrets.find(
      (s) => s.startsWith('hcph_') && createHash('sha256').update(s).digest('hex') === row!.credential_digest,
    )!;
    expect((await asHost(liveCredential).post(INTERNAL_ROUTES.heartbeat, heartbeat(1))).status).toBe(401);
    expect((await infra.post(`/v1/ops/hosts/${ids.host}/rotate`)).status).toBe(409);
    expect((await infra.get(`/v1/ops/hosts/${ids.host}`)).body.state).toBe('revoked');
    expect((await infra.get('/v1/ops/hosts/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });
});

describe('the internal router and the public API', () => {
  it('accepts no host credential on public routes, and no JWT on internal ones', async () => {
    const credential = (await enroll(await newToken(), 'kvm-apart')).body.credential;
    expect((await asHost(credential).get('/v1/ops/hosts')).status).toBe(401);
    expect((await asHost(credential).get('/v1/zones')).status).toBe(401);
    const opsJwt = await infra.post(INTERNAL_ROUTES.heartbeat, heartbeat(1));
    expect(opsJwt.status).toBe(401);
    expect(opsJwt.body.error.code).toBe('UNAUTHORIZED');
    expect((await anonymous.post(INTERNAL_ROUTES.heartbeat, heartbeat(1))).status).toBe(401);
  });

  it('leaves the internal routes out of the public OpenAPI document', async () => {
    const doc = await anonymous.get('/openapi.json');
    expect(Object.keys(doc.body.paths).filter((p) => p.startsWith('/internal'))).toEqual([]);
    expect(Object.keys(doc.body.paths)).toContain('/v1/ops/hosts');
  });
});

describe('a second HCP process with the internal router on its own port and a configured credential', () => {
  let other: HcpProcess;
  let internalBase = '';
  const staticCredential = 'static-secret-of-a-host-provisioned-elsewhere-0123456789';

  beforeAll(async () => {
    const internalPort = await freePort();
    internalBase = `http://127.0.0.1:${internalPort}`;
    const digest = createHash('sha256').update(staticCredential).digest('hex');
    secrets.push(staticCredential);
    other = await HcpProcess.start({
      databaseUrl: db.url,
      env: {
        LOG_LEVEL: 'debug',
        HCP_RECONCILE_INTERVAL_MS: '0',
        HCP_SEED_CATALOG: 'false',
        HCP_INTERNAL_PORT: String(internalPort),
        // Small budgets, taken by the tests below in order (the last test spends them).
        HCP_RATE_LIMIT_ENROLL_PER_MINUTE: '3',
        HCP_RATE_LIMIT_HOST_PER_MINUTE: '3',
        HCP_STATIC_HOST_CREDENTIALS: `${ids.cluster}/pxe-host-7=sha256:${digest}`,
      },
    });
  }, 120_000);

  afterAll(async () => {
    otherLogs = other?.logs ?? '';
    await other?.stop();
    other?.removeDataDir();
  });

  it('answers internal routes only on the internal port, and public routes only on PORT', async () => {
    const enrolled = await enroll(await newToken(), 'kvm-port', internalBase);
    expect(enrolled.status).toBe(201);
    expect(
      (await asHost(enrolled.body.credential, internalBase).post(INTERNAL_ROUTES.heartbeat, heartbeat(5))).status,
    ).toBe(204);
    const internalOnPublic = await asHost(enrolled.body.credential, other.baseUrl).post(
      INTERNAL_ROUTES.heartbeat,
      heartbeat(5),
    );
    expect(internalOnPublic.status).toBe(404);
    // Its own data folder, so its own dev signing key: ops tokens signed by it.
    const otherInfra = new ApiClient(other.baseUrl, other.token('ingrid', {}, ['infra-admin']));
    const opsOnInternal = await otherInfra.asBase(internalBase).get('/v1/ops/hosts');
    expect(opsOnInternal.status).toBe(404);
    expect((await new ApiClient(internalBase).get('/health/ready')).status).toBe(404);
    expect((await otherInfra.get('/v1/ops/hosts')).status).toBe(200);
  });

  it('authenticates a configured credential: its host appears on its first heartbeat and cannot be rotated', async () => {
    const beat = await asHost(staticCredential, internalBase).post(INTERNAL_ROUTES.heartbeat, heartbeat(7));
    expect(beat.status).toBe(204);
    const host = (await infra.get(`/v1/ops/hosts?cluster_id=${ids.cluster}`)).body.items.find(
      (h: { identity: string }) => h.identity === 'pxe-host-7',
    );
    expect(host).toMatchObject({ state: 'active', online: true, credential_source: 'static' });
    const rotate = await infra.post(`/v1/ops/hosts/${host.id}/rotate`);
    expect(rotate.status).toBe(409);
    expect(rotate.body.error.message).toContain('HCP_STATIC_HOST_CREDENTIALS');
    expect((await infra.post(`/v1/ops/hosts/${host.id}/revoke`)).status).toBe(200);
    expect((await asHost(staticCredential, internalBase).post(INTERNAL_ROUTES.heartbeat, heartbeat(7))).status).toBe(
      401,
    );
  });

  it('limits enrollment per client address and requests per host, apart from the public limits', async () => {
    // The first enrollment of this address was the one of the ports test above.
    const enrolled = await enroll(await newToken(), 'kvm-budget', internalBase);
    expect(enrolled.status).toBe(201);
    expect((await enroll('hcpb_not-a-token', 'kvm-budget', internalBase)).status).toBe(401);
    const limited = await enroll('hcpb_not-a-token', 'kvm-budget', internalBase);
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 'enroll' } });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const host = asHost(enrolled.body.credential, internalBase);
    for (let i = 0; i < 3; i++) expect((await host.post(INTERNAL_ROUTES.heartbeat, heartbeat(i))).status).toBe(204);
    const hostLimited = await host.post(INTERNAL_ROUTES.heartbeat, heartbeat(3));
    expect(hostLimited.status).toBe(429);
    expect(hostLimited.body.error).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 'host' } });
    // The public API keeps budgets of its own.
    const otherInfra = new ApiClient(other.baseUrl, other.token('ingrid', {}, ['infra-admin']));
    expect((await otherInfra.get('/v1/ops/hosts')).status).toBe(200);
  });
});

describe('metrics', () => {
  it('counts enrollments by outcome and refused internal credentials by reason', async () => {
    const metrics = (await anonymous.get('/metrics')).body as string;
    const count = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0);
    expect(count('hcp_host_enrollments_total\\{outcome="enrolled"\\}')).toBeGreaterThanOrEqual(3);
    expect(count('hcp_host_enrollments_total\\{outcome="re_enrolled"\\}')).toBeGreaterThanOrEqual(1);
    expect(count('hcp_host_enrollments_total\\{outcome="identity_conflict"\\}')).toBe(1);
    expect(count('hcp_host_enrollments_total\\{outcome="token_expired"\\}')).toBe(1);
    expect(count('hcp_internal_auth_refusals_total\\{reason="revoked"\\}')).toBeGreaterThanOrEqual(1);
    expect(count('hcp_internal_auth_refusals_total\\{reason="unknown"\\}')).toBeGreaterThanOrEqual(3);
  });

  it('counts hosts by state and whether they are online (hcp_hosts, refreshed every 15 s)', async () => {
    await eventually(
      async () => {
        const metrics = (await anonymous.get('/metrics')).body as string;
        return /^hcp_hosts\{state="revoked",online="false"\} [1-9]/m.test(metrics) ? true : undefined;
      },
      'hcp_hosts with the revoked host',
      40_000,
    );
  });
});

describe('secrets', () => {
  it('never writes a token or credential to the logs or the audit trail, which records who enrolled, revoked and rotated', async () => {
    const actions = await eventually(async () => {
      const res = await auditor.get('/v1/ops/audit?limit=200');
      const found = new Set((res.body.items as Array<{ action: string }>).map((r) => r.action));
      const wanted = ['host.enrollment.create', 'host.enroll', 'host.revoke', 'host.rotate'];
      return wanted.every((a) => found.has(a)) ? res.body : undefined;
    }, 'the host actions in the audit trail');
    const enrollRecord = (actions.items as Array<{ action: string; actor: string }>).find(
      (r) => r.action === 'host.enrollment.create',
    );
    expect(enrollRecord?.actor).toBe('ingrid');
    const audit = JSON.stringify(actions);
    const logs = hcp.logs + otherLogs;
    expect(secrets.length).toBeGreaterThan(5);
    expect(otherLogs).not.toBe('');
    for (const secret of secrets) {
      expect(logs).not.toContain(secret);
      expect(audit).not.toContain(secret);
    }
  });
});
