import { ProxmoxSimulator } from '../simulators/proxmox/proxmox-simulator';
import { ApiClient, eventually, jobFinished } from '../support/api-client';
import { connectConsole, refusedUpgrade } from '../support/console-client';
import { ProxmoxStack, startProxmoxStack, stopProxmoxStack } from '../support/proxmox-stack';

const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHlZYbNl7rMudkQn9R5hKhsnpmWCKkTr8PiDVkvtdFVY alice@laptop';

/**
 * HCP against "Proxmox VE": ops register the simulator as a provider through the API, a tenant runs a VM
 * through its whole lifecycle, and the simulator's own state shows the VMs, tags and configuration.
 */
describe('Proxmox provider end to end', () => {
  let stack: ProxmoxStack;
  let sim: ProxmoxSimulator;
  let tenant: ApiClient;
  let ids: ProxmoxStack['ids'];

  beforeAll(async () => {
    stack = await startProxmoxStack({
      latency: { scale: 0.02 },
      // debug: the console test below checks that no log line, however chatty, carries a provider ticket.
      env: { HCP_JOB_MAX_ATTEMPTS: '2', HCP_JOB_RETRY_BACKOFF_MS: '50', LOG_LEVEL: 'debug' },
      name: 'pve-lab',
      providerSettings: { bridge: 'vmbr0', address_wait_s: 0, full_clone: true },
      placementHints: { nodes: ['pve1', 'pve2'], storage: 'ceph-vm', pool: 'hcp' },
      imageMinDiskGb: 4,
      flavor: { vcpus: 2, ram_mb: 2048, disk_gb: 20 },
    });
    ({ sim, tenant, ids } = stack);
    expect(stack.registeredProvider.body.health.status).toBe('healthy');
  });

  afterAll(() => stopProxmoxStack(stack));

  const settle = (vmId: string, status: string) =>
    eventually(async () => {
      const vm = (await tenant.get(`/v1/projects/acme/vms/${vmId}`)).body;
      return vm.status === status ? vm : undefined;
    }, `VM ${status}`);

  it('runs the whole lifecycle on Proxmox, which holds exactly the expected VM at each step', async () => {
    const created = await tenant.post(
      '/v1/projects/acme/vms',
      {
        name: 'web-pve',
        zone: 'pve',
        image_id: ids.image,
        flavor_id: ids.flavor,
        ssh_keys: [SSH_KEY],
        tags: { env: 'prod' },
      },
      { 'x-request-id': 'trace-pve-create' },
    );
    expect(created.status).toBe(202);
    const vmId = created.body.resource_id;
    expect((await jobFinished(tenant, 'acme', created.body.job_id)).status).toBe('succeeded');
    await settle(vmId, 'running');

    const [pve] = sim.vmsByHcpId(vmId);
    expect(sim.vmsByHcpId(vmId)).toHaveLength(1);
    expect(pve).toMatchObject({ status: 'running', template: false, pool: 'hcp', ssh_keys: [SSH_KEY] });
    expect(pve.config).toMatchObject({ cores: '2', memory: '2048' });
    expect(pve.config.net0).toContain('bridge=vmbr0');
    expect(pve.description).toContain(vmId);
    expect(Math.max(...Object.values(pve.disks))).toBe(20 * 1024 ** 3);
    expect(sim.validationFailures).toEqual([]);
    // The tenant's request id travels with the job into the provider calls it causes.
    expect(
      sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/clone')).map((r) => r.request_id),
    ).toEqual(['trace-pve-create']);

    for (const [action, expected] of [
      ['stop', 'stopped'],
      ['start', 'running'],
      ['reboot', 'running'],
    ] as const) {
      const res = await tenant.post(`/v1/projects/acme/vms/${vmId}/actions/${action}`, { force: false });
      expect(res.status).toBe(202);
      expect((await jobFinished(tenant, 'acme', res.body.job_id)).status).toBe('succeeded');
      await settle(vmId, expected);
      expect(sim.vmsByHcpId(vmId).map((v) => v.status)).toEqual([expected]);
    }

    const del = await tenant.delete(`/v1/projects/acme/vms/${vmId}`);
    expect((await jobFinished(tenant, 'acme', del.body.job_id)).status).toBe('succeeded');
    expect(sim.vmsByHcpId(vmId)).toEqual([]);
    expect(sim.validationFailures).toEqual([]);
  });

  it('refuses a malformed ssh key with 400 naming its index, before any job or provider call', async () => {
    const clonesBefore = sim.requests.filter((r) => r.path.endsWith('/clone')).length;
    const vmsBefore = (await tenant.get('/v1/projects/acme/vms')).body.items.length;
    const refused = await tenant.post('/v1/projects/acme/vms', {
      name: 'bad-key',
      zone: 'pve',
      image_id: ids.image,
      flavor_id: ids.flavor,
      // The second declares ssh-rsa over an ed25519 blob: Proxmox's ssh-keygen check would refuse it.
      ssh_keys: [SSH_KEY, SSH_KEY.replace(/^ssh-ed25519/, 'ssh-rsa')],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('INVALID_REQUEST');
    expect(refused.body.error.details.fields).toEqual([
      {
        field: 'ssh_keys',
        problems: ['ssh_keys[1] declares ssh-rsa but its key blob is of type ssh-ed25519'],
      },
    ]);
    expect((await tenant.get('/v1/projects/acme/vms')).body.items.length).toBe(vmsBefore);
    expect(sim.requests.filter((r) => r.path.endsWith('/clone')).length).toBe(clonesBefore);
  });

  it('fails a create at once, without retries, when Proxmox refuses it for a reason a retry cannot change', async () => {
    sim.addFault({
      kind: 'error',
      status: 500,
      message: "can't clone VM to node 'pve2' (VM uses local storage)",
      method: 'POST',
      path: /\/clone$/,
    });
    try {
      const created = await tenant.post('/v1/projects/acme/vms', {
        name: 'never-pve',
        zone: 'pve',
        image_id: ids.image,
        flavor_id: ids.flavor,
      });
      expect(created.status).toBe(202);
      const job = await jobFinished(tenant, 'acme', created.body.job_id);
      expect(job).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'PROVIDER_UNAVAILABLE' } });
      expect(JSON.stringify(job)).not.toMatch(/pve2|local storage/);
    } finally {
      sim.clearFaults();
    }
  });

  it('fails a job with PROVIDER_UNAVAILABLE when Proxmox answers 500, keeping Proxmox details from tenants', async () => {
    const created = await tenant.post('/v1/projects/acme/vms', {
      name: 'flaky-pve',
      zone: 'pve',
      image_id: ids.image,
      flavor_id: ids.flavor,
    });
    expect((await jobFinished(tenant, 'acme', created.body.job_id)).status).toBe('succeeded');
    await settle(created.body.resource_id, 'running');
    sim.addFault({
      kind: 'error',
      status: 500,
      message: 'internal storage error on node pve1',
      method: 'POST',
      path: /\/status\/reboot$/,
    });
    const reboot = await tenant.post(`/v1/projects/acme/vms/${created.body.resource_id}/actions/reboot`, {});
    const job = await jobFinished(tenant, 'acme', reboot.body.job_id);
    expect(job).toMatchObject({ status: 'failed', attempts: 2, error: { code: 'PROVIDER_UNAVAILABLE' } });
    expect(JSON.stringify(job)).not.toMatch(/pve1|vmid|storage error/);
    await settle(created.body.resource_id, 'running');
  });

  it('relays a Proxmox VM console through HCP (vncproxy + vncwebsocket), the provider ticket never leaving HCP', async () => {
    const created = await tenant.post('/v1/projects/acme/vms', {
      name: 'console-pve',
      zone: 'pve',
      image_id: ids.image,
      flavor_id: ids.flavor,
    });
    expect((await jobFinished(tenant, 'acme', created.body.job_id)).status).toBe('succeeded');
    const vmId = created.body.resource_id;
    await settle(vmId, 'running');
    const [pve] = sim.vmsByHcpId(vmId);
    const answers: unknown[] = [];

    const session = await tenant.post(`/v1/projects/acme/vms/${vmId}/console`, { type: 'vnc' });
    expect(session.status).toBe(201);
    answers.push(session.body);
    const client = await connectConsole(session.body.url, session.body.token);
    expect(client.serverInit.width).toBeGreaterThan(0);
    expect(sim.openConsoleConnections(pve.vmid)).toBe(1);
    const reused = await refusedUpgrade(session.body.url, session.body.token);
    expect(reused.status).toBe(401);
    answers.push(reused.body);
    client.ws.close();
    await client.closed;
    await eventually(
      async () => (sim.openConsoleConnections(pve.vmid) === 0 ? true : undefined),
      'the Proxmox console closed',
    );

    // A refusal from Proxmox itself (the VM stopped behind HCP's back) reaches the tenant without Proxmox's words.
    const second = await tenant.post(`/v1/projects/acme/vms/${vmId}/console`, { type: 'vnc' });
    answers.push(second.body);
    sim.addFault({
      kind: 'error',
      status: 500,
      message: `VM ${pve.vmid} not running`,
      method: 'POST',
      path: /\/vncproxy$/,
    });
    const refused = await refusedUpgrade(second.body.url, second.body.token);
    answers.push(refused.body);
    expect(refused.status).toBeGreaterThanOrEqual(400);
    sim.clearFaults();

    const tickets = sim.vncTickets();
    expect(tickets.length).toBeGreaterThanOrEqual(1);
    const everything = JSON.stringify(answers) + stack.hcp.logs;
    for (const ticket of tickets) {
      expect(everything).not.toContain(ticket);
      // VNC authentication uses the ticket's first 8 characters; the part after them is its secret.
      expect(everything).not.toContain(ticket.slice(8, 40));
    }
    // The VNC password Proxmox answered with the ticket stays inside HCP too.
    const passwords = sim.vncPasswords();
    expect(passwords.length).toBeGreaterThanOrEqual(1);
    for (const password of passwords) expect(everything).not.toContain(password);
    expect(JSON.stringify(answers)).not.toMatch(/PVEVNC|pve1|pve2|vmid/);
    expect(sim.validationFailures).toEqual([]);
  });
});
