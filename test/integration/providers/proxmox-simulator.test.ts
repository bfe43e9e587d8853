/**
 * The Proxmox API simulator itself: that it validates requests against Proxmox's published schema
 * and answers errors the way Proxmox does, and that its auth, tasks, locks, VMID allocation and fault
 * injection behave. Raw HTTPS here, no driver, so the simulator is tested on its own terms.
 */
import https from 'node:https';
import path from 'node:path';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { WebSocket, createWebSocketStream } from 'ws';
import { StreamByteReader, connectRfbServer } from '@hcp/providers';
import { generateTlsMaterial } from '../../simulators/proxmox/certificate';
import { PveSchema, defaultSchemaFile } from '../../simulators/proxmox/pve-schema';
import { ProxmoxSimulator } from '../../simulators/proxmox/proxmox-simulator';

interface Answer {
  status: number;
  reason: string;
  body: { data?: unknown; errors?: Record<string, string>; message?: string } | undefined;
}

let sim: ProxmoxSimulator;
let base: string;
let ca: string;
let tokenHeader: string;
const PASSWORD = 'sim-password-1';

function call(
  method: string,
  apiPath: string,
  options: {
    params?: Record<string, string>;
    json?: unknown;
    headers?: Record<string, string>;
    auth?: 'token' | 'none';
  } = {},
): Promise<Answer> {
  const form = options.params ? new URLSearchParams(options.params).toString() : '';
  const withBody = method === 'POST' || method === 'PUT';
  const body = options.json !== undefined ? JSON.stringify(options.json) : withBody ? form : '';
  const url = new URL(`${base}/api2/json${apiPath}${!withBody && form ? `?${form}` : ''}`);
  const headers: Record<string, string> = { ...options.headers };
  if ((options.auth ?? 'token') === 'token') headers.Authorization = tokenHeader;
  if (withBody)
    headers['Content-Type'] = options.json !== undefined ? 'application/json' : 'application/x-www-form-urlencoded';
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method, headers, ca, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          reason: res.statusMessage ?? '',
          body: text ? JSON.parse(text) : undefined,
        });
      });
    });
    req.on('error', reject);
    req.end(withBody ? body : undefined);
  });
}

async function waitTask(node: string, upid: string): Promise<{ status: string; exitstatus?: string }> {
  for (let i = 0; i < 500; i++) {
    const st = await call('GET', `/nodes/${node}/tasks/${encodeURIComponent(upid)}/status`);
    const data = st.body!.data as { status: string; exitstatus?: string };
    if (data.status === 'stopped') return data;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('task did not stop');
}

beforeAll(async () => {
  sim = new ProxmoxSimulator({ latency: { scale: 0.01 }, users: { 'root@pam': PASSWORD }, vncConnectWaitMs: 1500 });
  const started = await sim.start();
  base = started.url;
  ca = started.caPem;
  tokenHeader = sim.createToken('test@pve', 'sim').header;
});

afterAll(async () => {
  await sim.stop();
});

afterEach(() => sim.clearFaults());

describe('schema', () => {
  it('is read from the simulator folder in the repository, and its absence fails loudly', () => {
    expect(defaultSchemaFile()).toBe(
      path.resolve(__dirname, '..', '..', 'simulators', 'proxmox', 'pve-api-subset.json'),
    );
    expect(sim.schema.endpoints.length).toBeGreaterThanOrEqual(40);
    expect(() => PveSchema.load('/nonexistent/pve-api-subset.json')).toThrow(/not found.*validates every request/s);
    expect(() => new ProxmoxSimulator({ schemaFile: '/nonexistent/pve-api-subset.json' })).toThrow(
      /Proxmox API schema not found/,
    );
  });

  it('routes every endpoint of the subset to that endpoint', () => {
    for (const e of sim.schema.endpoints) {
      const concrete = e.path
        .replace('{node}', 'pve1')
        .replace('{vmid}', '100')
        .replace('{upid}', 'UPID%3Apve1%3A1')
        .replace('{storage}', 'local');
      expect(sim.schema.match(e.method, concrete)?.endpoint).toBe(e);
    }
    expect(sim.schema.match('PATCH', '/version')).toBeNull();
  });
});

describe('request validation (Proxmox 400 answers)', () => {
  const expectVerificationFailure = (a: Answer, errors: Record<string, string | RegExp>) => {
    expect(a.status).toBe(400);
    expect(a.reason).toBe('Parameter verification failed.');
    expect(a.body!.data).toBeNull();
    expect(a.body!.message).toBe('Parameter verification failed.\n');
    for (const [k, v] of Object.entries(errors)) {
      if (typeof v === 'string') expect(a.body!.errors![k]).toBe(v);
      else expect(a.body!.errors![k]).toMatch(v);
    }
  };

  it('refuses an unknown parameter', async () => {
    const a = await call('GET', '/cluster/resources', { params: { type: 'vm', colour: 'blue' } });
    expectVerificationFailure(a, {
      colour: 'property is not defined in schema and the schema does not allow additional properties',
    });
  });

  it('refuses a missing required parameter', async () => {
    const a = await call('POST', '/nodes/pve1/qemu/9000/clone', { params: { name: 'x' } });
    expectVerificationFailure(a, { newid: 'property is missing and it is not optional' });
  });

  it('refuses wrong types, including true for a boolean in form encoding', async () => {
    const a = await call('PUT', '/nodes/pve1/qemu/9000/config', { params: { cores: 'two', onboot: 'true' } });
    expectVerificationFailure(a, {
      cores: "type check ('integer') failed - got 'two'",
      onboot: "type check ('boolean') failed - got 'true'",
    });
  });

  it('accepts JSON bodies with real booleans', async () => {
    const created = await call('POST', '/nodes/pve1/qemu', {
      params: { vmid: '990', name: 'json-test', memory: '512' },
    });
    // The create task holds `lock: create` until it stops; a config write before that is refused like Proxmox does.
    expect((await waitTask('pve1', created.body!.data as string)).exitstatus).toBe('OK');
    const a = await call('PUT', '/nodes/pve1/qemu/990/config', { json: { onboot: true, cores: 2 } });
    expect(a.status).toBe(200);
    expect(sim.getVm(990)!.config).toMatchObject({ onboot: '1', cores: '2' });
  });

  it('checks minimum, maximum, enum, pattern and maxLength', async () => {
    expectVerificationFailure(await call('PUT', '/nodes/pve1/qemu/9000/config', { params: { cores: '0' } }), {
      cores: 'value must have a minimum value of 1',
    });
    expectVerificationFailure(
      await call('POST', '/nodes/pve1/qemu/9000/config', { params: { background_delay: '31' } }),
      { background_delay: 'value must have a maximum value of 30' },
    );
    expectVerificationFailure(await call('GET', '/cluster/resources', { params: { type: 'disk' } }), {
      type: "value 'disk' does not have a value in the enumeration 'vm, storage, node, sdn'",
    });
    expectVerificationFailure(
      await call('PUT', '/nodes/pve1/qemu/9000/resize', { params: { disk: 'scsi0', size: 'big' } }),
      { size: 'value does not match the regex pattern' },
    );
    expectVerificationFailure(
      await call('PUT', '/nodes/pve1/qemu/9000/config', { params: { description: 'x'.repeat(8193) } }),
      {
        description: 'value may only be 8192 characters long',
      },
    );
  });

  it('checks named formats: VMIDs, node names, DNS names, url-encoded ssh keys, tags', async () => {
    expectVerificationFailure(await call('GET', '/nodes/pve_1/qemu/9000/config'), {
      node: 'invalid format - value does not look like a valid node name\n',
    });
    expectVerificationFailure(await call('GET', '/cluster/nextid', { params: { vmid: '0100' } }), {
      vmid: /value does not look like a valid VM ID/,
    });
    expectVerificationFailure(await call('PUT', '/nodes/pve1/qemu/9000/config', { params: { name: 'web_1' } }), {
      name: /valid DNS name/,
    });
    expectVerificationFailure(
      await call('PUT', '/nodes/pve1/qemu/9000/config', { params: { sshkeys: 'ssh-ed25519 AAAA' } }),
      { sshkeys: /invalid urlencoded string/ },
    );
    expectVerificationFailure(await call('PUT', '/nodes/pve1/qemu/9000/config', { params: { tags: 'ok;not:ok' } }), {
      tags: /invalid characters in tag/,
    });
  });

  it('checks property strings: keys, default keys, aliases, nested formats', async () => {
    expectVerificationFailure(
      await call('PUT', '/nodes/pve1/qemu/9000/config', { params: { net0: 'virtio,colour=blue' } }),
      {
        net0: 'invalid format - invalid key in comma-separated list property: colour\n',
      },
    );
    expectVerificationFailure(
      await call('PUT', '/nodes/pve1/qemu/9000/config', { params: { net0: 'virtio,bridge=vm br0' } }),
      {
        net0: /invalid format - format error\nnet0.bridge: invalid format - invalid bridge ID 'vm br0'/,
      },
    );
    expectVerificationFailure(
      await call('PUT', '/nodes/pve1/qemu/9000/config', { params: { ipconfig0: 'ip=10.0.0.5' } }),
      { ipconfig0: /ipv4 network configuration/ },
    );
    expectVerificationFailure(await call('PUT', '/nodes/pve1/qemu/9000/config', { params: { net9999: 'virtio' } }), {
      net9999: /not defined in schema/,
    });
    const ok = await call('PUT', '/nodes/pve1/qemu/990/config', {
      params: {
        net0: 'virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1',
        ipconfig0: 'ip=10.0.0.5/24,gw=10.0.0.1',
        memory: 'current=1024',
        agent: 'enabled=1,fstrim_cloned_disks=1',
      },
    });
    expect(ok.status).toBe(200);
  });

  it('records every validation failure for the tests that drive it', () => {
    expect(sim.validationFailures.length).toBeGreaterThan(5);
    expect(sim.validationFailures[0]).toMatchObject({ method: 'GET', endpoint: '/cluster/resources' });
  });

  it('answers 501 for what the schema does not have', async () => {
    const a = await call('GET', '/nodes/pve1/lxc');
    expect(a.status).toBe(501);
    expect(a.body!.message).toBe("Method 'GET /nodes/pve1/lxc' not implemented\n");
  });
});

describe('auth', () => {
  it('asks for a ticket without credentials, and refuses a wrong token secret', async () => {
    const none = await call('GET', '/version', { auth: 'none' });
    expect(none.status).toBe(401);
    expect(none.reason).toBe('No ticket');
    const wrong = await call('GET', '/version', {
      auth: 'none',
      headers: { Authorization: 'PVEAPIToken=test@pve!sim=nope' },
    });
    expect(wrong.status).toBe(401);
  });

  it('logs in with a password, needs CSRFPreventionToken on writes, and renews with the ticket', async () => {
    const login = await call('POST', '/access/ticket', {
      auth: 'none',
      params: { username: 'root@pam', password: PASSWORD },
    });
    expect(login.status).toBe(200);
    const { ticket, CSRFPreventionToken } = login.body!.data as { ticket: string; CSRFPreventionToken: string };
    expect(ticket).toMatch(/^PVE:root@pam:[0-9A-F]{8}::/);
    const cookie = { Cookie: `PVEAuthCookie=${encodeURIComponent(ticket)}` };
    expect((await call('GET', '/version', { auth: 'none', headers: cookie })).status).toBe(200);

    const noCsrf = await call('PUT', '/pools', {
      auth: 'none',
      headers: cookie,
      params: { poolid: 'hcp', comment: 'x' },
    });
    expect(noCsrf.status).toBe(401);
    expect(noCsrf.reason).toBe('Permission denied - invalid csrf token');
    const withCsrf = await call('PUT', '/pools', {
      auth: 'none',
      headers: { ...cookie, CSRFPreventionToken },
      params: { poolid: 'hcp', comment: 'x' },
    });
    expect(withCsrf.status).toBe(200);

    const renewals = sim.stats.ticketRenewals;
    const renewed = await call('POST', '/access/ticket', {
      auth: 'none',
      params: { username: 'root@pam', password: ticket },
    });
    expect(renewed.status).toBe(200);
    expect(sim.stats.ticketRenewals).toBe(renewals + 1);

    const bad = await call('POST', '/access/ticket', {
      auth: 'none',
      params: { username: 'root@pam', password: 'wrong' },
    });
    expect(bad.status).toBe(401);
    expect(bad.reason).toBe('authentication failure');
  });

  it('lets tickets expire', async () => {
    const short = new ProxmoxSimulator({ ticketLifetimeMs: 1000, users: { 'root@pam': PASSWORD } });
    const started = await short.start();
    try {
      const get = (headers: Record<string, string>) =>
        new Promise<number>((resolve, reject) => {
          https
            .get(`${started.url}/api2/json/version`, { ca: started.caPem, headers, agent: false }, (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            })
            .on('error', reject);
        });
      const login = await new Promise<string>((resolve, reject) => {
        const req = https.request(
          `${started.url}/api2/json/access/ticket`,
          {
            method: 'POST',
            ca: started.caPem,
            agent: false,
            headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve((JSON.parse(Buffer.concat(chunks).toString()) as { data: { ticket: string } }).data.ticket),
            );
          },
        );
        req.on('error', reject);
        req.end(`username=root%40pam&password=${PASSWORD}`);
      });
      const cookie = { Cookie: `PVEAuthCookie=${encodeURIComponent(login)}` };
      expect(await get(cookie)).toBe(200);
      // Tickets carry whole seconds; wait past lifetime plus rounding.
      await new Promise((r) => setTimeout(r, 2100));
      expect(await get(cookie)).toBe(401);
    } finally {
      await short.stop();
    }
  });
});

describe('cluster behaviour', () => {
  it('allocates the lowest free VMID and refuses a taken one as Proxmox does', async () => {
    const next = await call('GET', '/cluster/nextid');
    expect(typeof next.body!.data).toBe('number');
    expect(sim.getVm(next.body!.data as number)).toBeUndefined();
    const taken = await call('GET', '/cluster/nextid', { params: { vmid: '9000' } });
    expect(taken.status).toBe(400);
    expect(taken.body!.errors).toEqual({ vmid: 'VM 9000 already exists' });
  });

  it('shows a clone in progress as lock: clone and nothing else until its task ends', async () => {
    const slow = new ProxmoxSimulator({ latency: { scale: 1, cloneFullMs: 400 }, users: { 'root@pam': PASSWORD } });
    const started = await slow.start();
    const saved = { base, ca, tokenHeader };
    base = started.url;
    ca = started.caPem;
    tokenHeader = slow.createToken().header;
    try {
      const clone = await call('POST', '/nodes/pve1/qemu/9000/clone', {
        params: { newid: '151', name: 'c151', description: 'hcp-id: x', full: '1', storage: 'local-lvm' },
      });
      expect(clone.status).toBe(200);
      const config = await call('GET', '/nodes/pve1/qemu/151/config');
      expect(config.body!.data).toEqual({ lock: 'clone', digest: expect.any(String) });
      const listed = (await call('GET', '/cluster/resources', { params: { type: 'vm' } })).body!.data as Array<{
        vmid: number;
        name?: string;
        lock?: string;
        tags?: string;
      }>;
      const row = listed.find((r) => r.vmid === 151)!;
      expect(row.name).toBeUndefined();
      expect(row.tags).toBeUndefined();
      expect(row.lock).toBe('clone');
      await waitTask('pve1', clone.body!.data as string);
      expect((await call('GET', '/nodes/pve1/qemu/151/config')).body!.data).toMatchObject({
        name: 'c151',
        description: 'hcp-id: x',
      });
    } finally {
      ({ base, ca, tokenHeader } = saved);
      await slow.stop();
    }
  });

  it('refuses a clone to another node when any source volume, the cloud-init drive included, is local', async () => {
    const shared = new ProxmoxSimulator({
      latency: { scale: 0.01 },
      templates: [
        { vmid: 9000, name: 'local', node: 'pve1', storage: 'local-lvm' },
        { vmid: 9100, name: 'all-shared', node: 'pve1', storage: 'ceph-vm' },
        { vmid: 9101, name: 'ci-local', node: 'pve1', storage: 'ceph-vm', cloudinitStorage: 'local-lvm' },
      ],
    });
    const started = await shared.start();
    const saved = { base, ca, tokenHeader };
    base = started.url;
    ca = started.caPem;
    tokenHeader = shared.createToken().header;
    try {
      const cloneTo = (template: number, newid: number) =>
        call('POST', `/nodes/pve1/qemu/${template}/clone`, {
          params: { newid: String(newid), target: 'pve2', full: '1', storage: 'ceph-vm' },
        });
      for (const [template, newid] of [
        [9000, 160],
        [9101, 161],
      ]) {
        const refused = await cloneTo(template, newid);
        expect(refused.status).toBe(500);
        expect(refused.reason).toBe("can't clone VM to node 'pve2' (VM uses local storage)");
        expect(shared.getVm(newid)).toBeUndefined();
      }
      const moved = await cloneTo(9100, 162);
      expect(moved.status).toBe(200);
      expect(await waitTask('pve1', moved.body!.data as string)).toMatchObject({ exitstatus: 'OK' });
      expect(shared.getVm(162)!.node).toBe('pve2');
      // On its own node a template on local storage clones fine.
      const home = await call('POST', '/nodes/pve1/qemu/9000/clone', { params: { newid: '163', full: '1' } });
      expect(home.status).toBe(200);
    } finally {
      ({ base, ca, tokenHeader } = saved);
      await shared.stop();
    }
  });

  it('refuses a config with a malformed ssh key as Proxmox’s ssh-keygen check does, and a description over 8 KiB', async () => {
    sim.addForeignVm(170, 'pve1');
    const good = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHlZYbNl7rMudkQn9R5hKhsnpmWCKkTr8PiDVkvtdFVY u@h';
    const put = (params: Record<string, string>) => call('PUT', '/nodes/pve1/qemu/170/config', { params });
    expect((await put({ sshkeys: encodeURIComponent(good) })).status).toBe(200);
    for (const bad of [
      'ssh-ed25519 AAAA',
      good.replace(/^ssh-ed25519/, 'ssh-rsa'),
      good.replace(/^ssh-ed25519/, 'ssh-dss'),
      `${good}\nnot-a-key AAAA`,
    ]) {
      const refused = await put({ sshkeys: encodeURIComponent(bad) });
      expect(refused.status).toBe(500);
      expect(refused.body!.message).toBe('SSH public key validation error\n');
    }
    expect(sim.getVm(170)!.ssh_keys).toEqual([good]);
    expect((await put({ description: 'd'.repeat(8192) })).status).toBe(200);
    const long = await put({ description: 'd'.repeat(8193) });
    expect(long.status).toBe(400);
    expect(long.body!.errors).toEqual({ description: 'value may only be 8192 characters long' });
    sim.validationFailures.length = 0;
  });

  it('runs a clone as a task that holds the clone lock until it ends OK', async () => {
    const slow = new ProxmoxSimulator({ latency: { scale: 1, cloneFullMs: 300 }, users: { 'root@pam': PASSWORD } });
    const started = await slow.start();
    const savedBase = base;
    const savedCa = ca;
    const savedToken = tokenHeader;
    base = started.url;
    ca = started.caPem;
    tokenHeader = slow.createToken().header;
    try {
      const clone = await call('POST', '/nodes/pve1/qemu/9000/clone', {
        params: { newid: '150', name: 'c150', full: '1', storage: 'local-lvm' },
      });
      expect(clone.status).toBe(200);
      const upid = clone.body!.data as string;
      // The task id of a clone is the source VMID; the user is the token's.
      expect(upid).toMatch(/^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8,9}:[0-9A-F]{8}:qmclone:9000:hcp@pve!hcp:$/);
      expect(slow.getVm(150)!.lock).toBe('clone');
      const running = await call('GET', `/nodes/pve1/tasks/${encodeURIComponent(upid)}/status`);
      expect(running.body!.data).toMatchObject({ status: 'running', type: 'qmclone', id: '9000' });
      // Locked while cloning: config writes and starts are refused.
      const locked = await call('POST', '/nodes/pve1/qemu/150/status/start');
      expect(locked.status).toBe(500);
      expect(locked.reason).toBe('VM is locked (clone)');
      expect(await waitTask('pve1', upid)).toMatchObject({ status: 'stopped', exitstatus: 'OK' });
      expect(slow.getVm(150)!.lock).toBeUndefined();
      expect(slow.getVm(150)!.config.scsi0).toMatch(/^local-lvm:vm-150-disk-0,/);
    } finally {
      base = savedBase;
      ca = savedCa;
      tokenHeader = savedToken;
      await slow.stop();
    }
  });

  it('answers Proxmox’s synchronous refusals: running VM destroy, start of a running VM, missing VM, shrinking', async () => {
    const created = await call('POST', '/nodes/pve1/qemu', {
      params: { vmid: '991', name: 'sync-test', memory: '512', scsi0: 'local-lvm:4' },
    });
    await waitTask('pve1', created.body!.data as string);
    const start = await call('POST', '/nodes/pve1/qemu/991/status/start');
    await waitTask('pve1', start.body!.data as string);
    const again = await call('POST', '/nodes/pve1/qemu/991/status/start');
    expect([again.status, again.reason]).toEqual([500, 'VM 991 already running']);
    const destroy = await call('DELETE', '/nodes/pve1/qemu/991');
    expect([destroy.status, destroy.reason]).toEqual([500, 'VM 991 is running - destroy failed']);
    const wrongNode = await call('GET', '/nodes/pve2/qemu/991/config');
    expect(wrongNode.status).toBe(500);
    expect(wrongNode.body!.message).toBe("Configuration file 'nodes/pve2/qemu-server/991.conf' does not exist\n");
    const shrink = await call('PUT', '/nodes/pve1/qemu/991/resize', { params: { disk: 'scsi0', size: '1G' } });
    expect([shrink.status, shrink.reason]).toEqual([500, 'shrinking disks is not supported']);
    const unknownTask = await call(
      'GET',
      `/nodes/pve1/tasks/${encodeURIComponent('UPID:pve1:00000001:00000001:00000001:qmstart:1:x@pam:')}/status`,
    );
    expect(unknownTask.status).toBe(400);
    expect(unknownTask.body!.errors).toEqual({ upid: 'no such task' });
  });

  it('exposes its state for tests: templates, VMs, tags, config', () => {
    const templates = sim.listVms().filter((v) => v.template);
    expect(templates.map((t) => [t.vmid, t.name, t.node])).toEqual([
      [9000, 'debian-12', 'pve1'],
      [9001, 'ubuntu-24.04', 'pve2'],
    ]);
    expect(templates[0].disks).toEqual({ scsi0: 2 * 1024 ** 3 });
  });
});

describe('fault injection', () => {
  it('answers an injected error for a method and path, a given number of times', async () => {
    const id = sim.addFault({
      kind: 'error',
      status: 503,
      message: 'Service Unavailable',
      method: 'GET',
      path: '/version',
      times: 1,
    });
    const first = await call('GET', '/version');
    expect([first.status, first.reason, first.body!.message]).toEqual([
      503,
      'Service Unavailable',
      'Service Unavailable\n',
    ]);
    expect((await call('GET', '/version')).status).toBe(200);
    expect(sim.faultHits(id)).toBe(1);
  });

  it('drops connections and slows answers', async () => {
    sim.addFault({ kind: 'drop', path: /\/version$/, times: 1 });
    await expect(call('GET', '/version')).rejects.toThrow(/socket hang up|ECONNRESET/);
    sim.addFault({ kind: 'delay', ms: 200, path: '/version', times: 1 });
    const started = Date.now();
    expect((await call('GET', '/version')).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('fails a task with the given exit status and undoes a failed clone', async () => {
    sim.addFault({
      kind: 'task-fail',
      message: "can't lock file '/var/lock/pve-manager/pve-storage-local-lvm' - got timeout",
      path: '/nodes/{node}/qemu/{vmid}/clone',
    });
    const clone = await call('POST', '/nodes/pve1/qemu/9000/clone', { params: { newid: '160', name: 'c160' } });
    const st = await waitTask('pve1', clone.body!.data as string);
    expect(st.exitstatus).toBe(
      "clone failed: can't lock file '/var/lock/pve-manager/pve-storage-local-lvm' - got timeout",
    );
    expect(sim.getVm(160)).toBeUndefined();
    const log = await call('GET', `/nodes/pve1/tasks/${encodeURIComponent(clone.body!.data as string)}/log`);
    expect(log.body!.data).toEqual([{ n: 1, t: `TASK ERROR: ${st.exitstatus}` }]);
  });
});

describe('consoles', () => {
  let nextVmid = 700;

  async function runningVm(): Promise<number> {
    const vmid = nextVmid++;
    sim.addForeignVm(vmid, 'pve1');
    const start = await call('POST', `/nodes/pve1/qemu/${vmid}/status/start`);
    expect((await waitTask('pve1', start.body!.data as string)).exitstatus).toBe('OK');
    return vmid;
  }

  interface Grant {
    user: string;
    ticket: string;
    port: number;
    upid: string;
    cert: string;
    password?: string;
  }

  async function vncProxy(vmid: number, headers?: Record<string, string>): Promise<Grant> {
    const answer = await call('POST', `/nodes/pve1/qemu/${vmid}/vncproxy`, {
      params: { websocket: '1' },
      ...(headers ? { auth: 'none' as const, headers } : {}),
    });
    expect(answer.status).toBe(200);
    return answer.body!.data as Grant;
  }

  /** The upgrade: an open websocket, or the HTTP status it was refused with. */
  function upgrade(
    vmid: number,
    query: { port: number; vncticket: string },
    headers: Record<string, string> = { Authorization: tokenHeader },
  ): Promise<WebSocket | number> {
    const q = new URLSearchParams({ port: String(query.port), vncticket: query.vncticket });
    const ws = new WebSocket(`${base.replace('https:', 'wss:')}/api2/json/nodes/pve1/qemu/${vmid}/vncwebsocket?${q}`, {
      ca,
      headers,
    });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(ws));
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      ws.once('error', reject);
    });
  }

  async function rfbServerInit(ws: WebSocket, password: string) {
    const stream = createWebSocketStream(ws);
    await connectRfbServer(stream, { password, timeoutMs: 5000 });
    const reader = new StreamByteReader(stream);
    stream.write(Buffer.from([1]));
    const init = await reader.read(24);
    return { width: init.readUInt16BE(0), name: (await reader.read(init.readUInt32BE(20))).toString() };
  }

  it('hands out a fresh PVEVNC ticket and VNC password for the token user, a free port and a running vncproxy task', async () => {
    const vmid = await runningVm();
    const a = await vncProxy(vmid);
    const b = await vncProxy(vmid);
    expect(a).toEqual({
      user: 'test@pve!sim',
      ticket: expect.stringMatching(/^PVEVNC:[0-9A-F]{8}::/),
      port: expect.any(Number),
      upid: expect.stringMatching(/^UPID:pve1:.*:vncproxy:/),
      cert: expect.stringContaining('BEGIN CERTIFICATE'),
      // Printable ASCII ('!' .. '~'), as the schema describes it.
      password: expect.stringMatching(/^[!-~]{8}$/),
    });
    expect(b.ticket).not.toBe(a.ticket);
    expect(b.password).not.toBe(a.password);
    expect(b.port).not.toBe(a.port);
    expect(a.port).toBeGreaterThanOrEqual(5900);
    expect(a.port).toBeLessThanOrEqual(5999);
    expect(
      ((await call('GET', `/nodes/pve1/tasks/${encodeURIComponent(a.upid)}/status`)).body!.data as { status: string })
        .status,
    ).toBe('running');
  });

  it('serves RFB over the websocket with the answered password as VNC password, and ends the task OK when it closes', async () => {
    const vmid = await runningVm();
    const grant = await vncProxy(vmid);
    const ws = await upgrade(vmid, { port: grant.port, vncticket: grant.ticket });
    if (typeof ws === 'number') throw new Error(`upgrade refused with ${ws}`);
    expect(await rfbServerInit(ws, grant.password!)).toEqual({ width: 320, name: `VM ${vmid}` });
    expect(sim.openConsoleConnections(vmid)).toBe(1);
    ws.close();
    expect(await waitTask('pve1', grant.upid)).toMatchObject({ exitstatus: 'OK' });
    expect(sim.openConsoleConnections(vmid)).toBe(0);
  });

  it('refuses the VNC handshake with a wrong password, the ticket included when a password was answered', async () => {
    const vmid = await runningVm();
    const grant = await vncProxy(vmid);
    const ws = await upgrade(vmid, { port: grant.port, vncticket: grant.ticket });
    if (typeof ws === 'number') throw new Error(`upgrade refused with ${ws}`);
    await expect(
      connectRfbServer(createWebSocketStream(ws), { password: grant.ticket, timeoutMs: 5000 }),
    ).rejects.toMatchObject({ reason: 'auth_failed' });
  });

  it('takes the ticket as VNC password when playing a Proxmox that answers no password', async () => {
    const old = new ProxmoxSimulator({ latency: { scale: 0.01 }, vncPasswords: false });
    const started = await old.start();
    const saved = { base, ca, tokenHeader };
    base = started.url;
    ca = started.caPem;
    tokenHeader = old.createToken('test@pve', 'sim').header;
    try {
      const vmid = nextVmid++;
      old.addForeignVm(vmid, 'pve1');
      await waitTask('pve1', (await call('POST', `/nodes/pve1/qemu/${vmid}/status/start`)).body!.data as string);
      const grant = await vncProxy(vmid);
      expect(grant.password).toBeUndefined();
      const ws = await upgrade(vmid, { port: grant.port, vncticket: grant.ticket });
      if (typeof ws === 'number') throw new Error(`upgrade refused with ${ws}`);
      expect(await rfbServerInit(ws, grant.ticket)).toEqual({ width: 320, name: `VM ${vmid}` });
      ws.close();
    } finally {
      ({ base, ca, tokenHeader } = saved);
      await old.stop();
    }
  });

  it('works with a ticket login too: the cookie identity is the one the VNC ticket is bound to', async () => {
    const vmid = await runningVm();
    const login = await call('POST', '/access/ticket', {
      auth: 'none',
      params: { username: 'root@pam', password: PASSWORD },
    });
    const { ticket, CSRFPreventionToken } = login.body!.data as { ticket: string; CSRFPreventionToken: string };
    const cookie = { Cookie: `PVEAuthCookie=${encodeURIComponent(ticket)}` };
    const grant = await vncProxy(vmid, { ...cookie, CSRFPreventionToken });
    expect(grant.user).toBe('root@pam');
    // The token user may not use root's VNC ticket.
    expect(await upgrade(vmid, { port: grant.port, vncticket: grant.ticket })).toBe(401);
    const ws = await upgrade(vmid, { port: grant.port, vncticket: grant.ticket }, cookie);
    if (typeof ws === 'number') throw new Error(`upgrade refused with ${ws}`);
    ws.close();
  });

  it('refuses unauthenticated upgrades with 401 No ticket, and a plain GET with 400', async () => {
    const vmid = await runningVm();
    const grant = await vncProxy(vmid);
    expect(await upgrade(vmid, { port: grant.port, vncticket: grant.ticket }, {})).toBe(401);
    const plain = await call('GET', `/nodes/pve1/qemu/${vmid}/vncwebsocket`, {
      params: { port: String(grant.port), vncticket: grant.ticket },
    });
    expect(plain.status).toBe(400);
  });

  it('refuses a wrong ticket, a wrong port, another VM and a ticket used twice', async () => {
    const vmid = await runningVm();
    const other = await runningVm();
    const grant = await vncProxy(vmid);
    expect(await upgrade(vmid, { port: grant.port, vncticket: `${grant.ticket.slice(0, -4)}AAAA` })).toBe(401);
    expect(await upgrade(vmid, { port: grant.port === 5999 ? 5998 : grant.port + 1, vncticket: grant.ticket })).toBe(
      401,
    );
    expect(await upgrade(other, { port: grant.port, vncticket: grant.ticket })).toBe(401);
    const ws = await upgrade(vmid, { port: grant.port, vncticket: grant.ticket });
    expect(ws).toBeInstanceOf(WebSocket);
    expect(await upgrade(vmid, { port: grant.port, vncticket: grant.ticket })).toBe(401);
    (ws as WebSocket).close();
  });

  it('accepts a ticket only from 20 s before to 40 s after its issue', async () => {
    const vmid = await runningVm();
    const late = await vncProxy(vmid);
    sim.backdateVncTickets(41_000);
    expect(await upgrade(vmid, { port: late.port, vncticket: late.ticket })).toBe(401);
    const early = await vncProxy(vmid);
    sim.backdateVncTickets(-21_000);
    expect(await upgrade(vmid, { port: early.port, vncticket: early.ticket })).toBe(401);
  });

  it('refuses vncproxy and the upgrade for a stopped VM, and a VM on another node', async () => {
    const vmid = nextVmid++;
    sim.addForeignVm(vmid, 'pve1');
    const refused = await call('POST', `/nodes/pve1/qemu/${vmid}/vncproxy`, { params: { websocket: '1' } });
    expect(refused.status).toBe(500);
    expect(refused.body!.message).toBe(`VM ${vmid} not running\n`);
    expect((await call('POST', `/nodes/pve2/qemu/${vmid}/vncproxy`)).status).toBe(500);
    expect(await upgrade(vmid, { port: 5900, vncticket: 'PVEVNC:00000000::x' })).toBe(500);
  });

  it('ends an unused vncproxy task with "connection timed out"', async () => {
    const vmid = await runningVm();
    const grant = await vncProxy(vmid);
    expect(await waitTask('pve1', grant.upid)).toMatchObject({ exitstatus: 'connection timed out' });
    expect(await upgrade(vmid, { port: grant.port, vncticket: grant.ticket })).toBe(401);
  });

  it('closes the websocket when the VM stops', async () => {
    const vmid = await runningVm();
    const grant = await vncProxy(vmid);
    const ws = await upgrade(vmid, { port: grant.port, vncticket: grant.ticket });
    if (typeof ws === 'number') throw new Error(`upgrade refused with ${ws}`);
    await rfbServerInit(ws, grant.password!);
    const closed = once(ws, 'close');
    const stop = await call('POST', `/nodes/pve1/qemu/${vmid}/status/stop`);
    await waitTask('pve1', stop.body!.data as string);
    await closed;
    expect(sim.openConsoleConnections(vmid)).toBe(0);
    expect(sim.validationFailures.filter((f) => f.endpoint.includes('vnc'))).toEqual([]);
  });
});

describe('certificate', () => {
  it('is a CA-signed ECDSA server certificate for localhost and 127.0.0.1 with the advertised fingerprint', () => {
    const material = generateTlsMaterial();
    const cert = new X509Certificate(material.certPem);
    const caCert = new X509Certificate(material.caPem);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(caCert.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.checkHost('localhost')).toBe('localhost');
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.fingerprint256).toBe(material.fingerprint256);
    expect(new Date(cert.validTo).getTime()).toBeGreaterThan(Date.now() + 7 * 86_400_000);
  });
});
