/**
 * A Proxmox VE API simulator: an HTTPS server on 127.0.0.1 answering `/api2/json/...` the way a PVE 9
 * cluster does, for the calls a VM control plane makes.
 *
 * - Every request is checked against Proxmox's published schema (pve-api-subset.json) before it is
 *   handled: unknown parameter, wrong type, missing required parameter, bad format/pattern/enum/range
 *   → 400 "Parameter verification failed." with `errors`, as Proxmox answers. Paths outside the
 *   schema → 501. So a driver that drifts from the real API fails here too.
 * - Cluster: nodes with memory, storages, templates, VMs with their config, VMID allocation, config
 *   locks and per-VM file locks held by running tasks. A clone in progress has only `lock: clone` in
 *   its config (no name, no description) until its task ends, as in qemu-server; a clone to another
 *   node is refused when a source disk (cloud-init drive included) is on non-shared storage.
 * - Config checks Proxmox makes beyond the schema: every `sshkeys` line must be an OpenSSH public key
 *   (Proxmox runs ssh-keygen on each): else 500 `SSH public key validation error`.
 * - Tasks (UPIDs) that run for a while (latency × scale; scale 0 allowed) and end OK or with an error.
 * - Auth: API tokens and tickets (cookie + CSRFPreventionToken on writes), tickets expire.
 * - Faults: errors (5xx, lock messages), slow answers, dropped connections (before or after the work
 *   is done), failed tasks, a VMID stolen between nextid and clone; per method and path, n times.
 * - Consoles: vncproxy grants a single-use PVEVNC ticket and a VNC `password` (PVE 9 always generates
 *   one); the vncwebsocket upgrade, on the node that answered vncproxy and as the same identity, opens
 *   an RFB server that takes that password (vnc-console.ts). `vncPasswords: false` plays an older PVE
 *   that returns no password and takes the ticket as VNC password.
 * - Inspection for tests: VMs with config and tags, tasks, request log, validation failures.
 *
 * Answers follow pve-http-server: `{"data": ...}`; errors carry the message as reason phrase and in
 * the body (`{"data": null, "message": "...\n", "errors"?: {...}}`; `legacyErrors` drops the body
 * message as servers before libpve-http-server-perl 5.2.0 did).
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual, createHash } from 'node:crypto';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { generateTlsMaterial, type SimulatorTlsMaterial } from './certificate';
import { PveSchema, type PveEndpoint } from './pve-schema';
import { SimVncConsoles } from './vnc-console';

// ---------------------------------------------------------------------------------------------------
// Options and public types

export interface SimLatency {
  /** Multiplies every duration below; 0 makes tasks finish at once (still asynchronously). */
  scale: number;
  /** Extra time before every answer. */
  requestMs: number;
  cloneLinkedMs: number;
  cloneFullMs: number;
  createMs: number;
  startMs: number;
  stopMs: number;
  shutdownMs: number;
  rebootMs: number;
  resetMs: number;
  suspendMs: number;
  destroyMs: number;
  resizeMs: number;
  templateMs: number;
  snapshotMs: number;
  /** From start until the guest agent answers. */
  agentBootMs: number;
}

export const DEFAULT_SIM_LATENCY: Readonly<SimLatency> = Object.freeze({
  scale: 1,
  requestMs: 0,
  cloneLinkedMs: 400,
  cloneFullMs: 2000,
  createMs: 300,
  startMs: 800,
  stopMs: 300,
  shutdownMs: 1200,
  rebootMs: 1500,
  resetMs: 300,
  suspendMs: 300,
  destroyMs: 500,
  resizeMs: 300,
  templateMs: 500,
  snapshotMs: 500,
  agentBootMs: 2000,
});

export interface SimNodeSpec {
  name: string;
  /** Bytes. */
  maxmem?: number;
  /** Bytes used by the host itself (VM memory is added while they run). */
  baseMem?: number;
  maxcpu?: number;
  online?: boolean;
}

export interface SimStorageSpec {
  storage: string;
  type: string;
  content: string;
  shared?: boolean;
  /** Nodes that have it; all nodes when absent. */
  nodes?: string[];
  /** Bytes. */
  total?: number;
}

export interface SimTemplateSpec {
  vmid: number;
  name: string;
  node: string;
  storage?: string;
  diskGb?: number;
  tags?: string;
  /** Whether the template's guest runs a QEMU guest agent (config `agent: 1`). */
  agent?: boolean;
  /** Storage of the template's cloud-init drive; `storage` when absent. */
  cloudinitStorage?: string;
}

export interface ProxmoxSimulatorOptions {
  host?: string;
  port?: number;
  nodes?: SimNodeSpec[];
  storages?: SimStorageSpec[];
  templates?: SimTemplateSpec[];
  pools?: string[];
  /** `user@realm` → password. Default `root@pam` / `simulator`. */
  users?: Record<string, string>;
  latency?: Partial<SimLatency>;
  /** Ticket lifetime; Proxmox uses 2 h. */
  ticketLifetimeMs?: number;
  /** Proxmox delays 401 answers by about 3 s; default 0 here. */
  unauthorizedDelayMs?: number;
  /** Error answers without the body `message` (servers before pve-http-server 5.2.0). */
  legacyErrors?: boolean;
  /** Requires `X-Sim-Admin-Key` on the `/_sim/...` admin routes when set. */
  adminKey?: string;
  schemaFile?: string;
  tls?: SimulatorTlsMaterial;
  clusterName?: string;
  /** How long a vncproxy task waits for its websocket; Proxmox waits 10 s. */
  vncConnectWaitMs?: number;
  /** vncproxy answers a `password` (PVE 9; default true). false: no password, the ticket is the VNC password. */
  vncPasswords?: boolean;
}

export type SimFault =
  /** Answer with this status and message instead of handling the request. */
  | { kind: 'error'; status: number; message: string; errors?: Record<string, string> }
  /** Wait this long before handling (Infinity: never answer). */
  | { kind: 'delay'; ms: number }
  /** Close the connection without an answer and without doing anything. */
  | { kind: 'drop' }
  /** Do the work, then close the connection without an answer (outcome unknown to the client). */
  | { kind: 'drop-after' }
  /** Start the task, but let it end with this exit status (and undo its work). */
  | { kind: 'task-fail'; message: string }
  /** Someone else takes the clone's `newid` just before the clone runs. */
  | { kind: 'steal-vmid' };

export type SimFaultRule = SimFault & {
  method?: string;
  /** Schema path (`/nodes/{node}/qemu/{vmid}/clone`), concrete API path, or a RegExp tried on both. */
  path?: string | RegExp;
  /** Fires this many times (default: every time). */
  times?: number;
  /** Lets this many matching requests pass first. */
  skip?: number;
};

export interface SimVmView {
  vmid: number;
  node: string;
  name?: string;
  template: boolean;
  status: 'running' | 'stopped';
  qmpstatus: string;
  lock?: string;
  tags: string[];
  description?: string;
  /** The HCP id from the description (`hcp-id: ...`), if any. */
  hcp_id?: string;
  /** Decoded `sshkeys`. */
  ssh_keys: string[];
  /** Disk sizes in bytes by disk key. */
  disks: Record<string, number>;
  pool?: string;
  config: Record<string, string>;
}

export interface SimRequestRecord {
  method: string;
  path: string;
  /** Schema path, when the request matched one. */
  endpoint?: string;
  status: number;
  auth: 'token' | 'ticket' | 'none';
  csrf: boolean;
  /** Parameters (password values replaced). */
  params: Record<string, unknown>;
  /** The caller's X-Request-Id, if it sent one. */
  request_id?: string;
  at: number;
}

export interface SimValidationFailure {
  method: string;
  endpoint: string;
  errors: Record<string, string>;
}

// ---------------------------------------------------------------------------------------------------
// Internal model

interface SimNode {
  name: string;
  maxmem: number;
  baseMem: number;
  maxcpu: number;
  online: boolean;
}

interface SimVm {
  vmid: number;
  node: string;
  config: Record<string, string>;
  running: boolean;
  paused: boolean;
  startedAt?: number;
  agentReadyAt?: number;
  /** UPID of the task holding the VM's file lock. */
  flock?: string;
  pool?: string;
  /** Guest behaviour. */
  guest: { acpi: boolean; agent: boolean };
  /** The config a clone in progress writes when its task ends (until then the config is `lock: clone`). */
  pendingConfig?: Record<string, string>;
  snapshots: Array<{ name: string; description: string; snaptime: number }>;
}

interface SimTask {
  upid: string;
  node: string;
  pid: number;
  pstart: number;
  starttime: number;
  type: string;
  id: string;
  user: string;
  status: 'running' | 'stopped';
  exitstatus?: string;
  endtime?: number;
  log: string[];
}

/** An error a handler raises: answered as Proxmox would. */
class PveError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors?: Record<string, string>,
  ) {
    super(message);
  }
}

/** A task worker's failure: becomes the task's exit status. */
class TaskFailure extends Error {}

interface RequestContext {
  method: string;
  rawPath: string;
  endpoint: PveEndpoint;
  params: Record<string, string>;
  user: string;
  /** A `task-fail` fault waiting for this request's task. */
  taskFault?: string;
  stealVmid: boolean;
}

const GiB = 1024 ** 3;
const TICKET_KEY_BYTES = 32;

const DEFAULT_NODES: SimNodeSpec[] = [
  { name: 'pve1', maxmem: 64 * GiB, baseMem: 4 * GiB, maxcpu: 16 },
  { name: 'pve2', maxmem: 64 * GiB, baseMem: 2 * GiB, maxcpu: 16 },
];
const DEFAULT_STORAGES: SimStorageSpec[] = [
  { storage: 'local', type: 'dir', content: 'iso,vztmpl,backup,snippets', total: 100 * GiB },
  { storage: 'local-lvm', type: 'lvmthin', content: 'images,rootdir', total: 500 * GiB },
  { storage: 'ceph-vm', type: 'rbd', content: 'images', shared: true, total: 4096 * GiB },
];
const DEFAULT_TEMPLATES: SimTemplateSpec[] = [
  { vmid: 9000, name: 'debian-12', node: 'pve1', storage: 'local-lvm', diskGb: 2, agent: true },
  { vmid: 9001, name: 'ubuntu-24.04', node: 'pve2', storage: 'local-lvm', diskGb: 3, agent: true },
];

const hex = (n: number, width = 8) => n.toString(16).toUpperCase().padStart(width, '0');

function randomMac(): string {
  // BC:24:11 is Proxmox's OUI for generated addresses.
  const b = randomBytes(3);
  return `BC:24:11:${[...b].map((x) => hex(x, 2)).join(':')}`;
}

function parseProps(text: string | undefined): Array<[string, string]> {
  if (!text) return [];
  return text
    .split(',')
    .filter((p) => p.trim() !== '')
    .map((p) => {
      const eq = p.indexOf('=');
      return eq < 0 ? (['', p] as [string, string]) : ([p.slice(0, eq), p.slice(eq + 1)] as [string, string]);
    });
}

function printProps(entries: Array<[string, string]>): string {
  return entries.map(([k, v]) => (k === '' ? v : `${k}=${v}`)).join(',');
}

function parseSize(text: string | undefined): number | undefined {
  const m = text ? /^(\d+(?:\.\d+)?)([KMGT]?)$/.exec(text) : null;
  if (!m) return undefined;
  const unit = { '': 1, K: 1024, M: 1024 ** 2, G: GiB, T: 1024 * GiB }[m[2] as '' | 'K' | 'M' | 'G' | 'T'];
  return Math.floor(Number(m[1]) * unit);
}

function formatSize(bytes: number): string {
  for (const [unit, size] of [
    ['T', 1024 * GiB],
    ['G', GiB],
    ['M', 1024 ** 2],
    ['K', 1024],
  ] as const) {
    if (bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return String(bytes);
}

const DISK_KEY = /^(ide|sata|scsi|virtio)\d+$/;
const NET_KEY = /^net\d+$/;

function isDisk(key: string, value: string): boolean {
  if (!DISK_KEY.test(key)) return false;
  const entries = parseProps(value);
  return !entries.some(([k, v]) => k === 'media' && v === 'cdrom') && !/cloudinit/.test(entries[0]?.[1] ?? '');
}

function memoryMiB(value: string | undefined): number {
  const entry = parseProps(value).find(([k]) => k === '' || k === 'current');
  return entry ? Number(entry[1]) : 512;
}

function agentOn(value: string | undefined): boolean {
  const entry = parseProps(value).find(([k]) => k === '' || k === 'enabled');
  return !!entry && /^(1|on|yes|true)$/i.test(entry[1]);
}

// ---------------------------------------------------------------------------------------------------

export class ProxmoxSimulator {
  readonly schema: PveSchema;
  readonly latency: SimLatency;
  private readonly options: ProxmoxSimulatorOptions;
  private server: https.Server | undefined;
  private tlsMaterial: SimulatorTlsMaterial | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private url = '';

  private readonly nodes = new Map<string, SimNode>();
  private readonly storages: SimStorageSpec[];
  private readonly vms = new Map<number, SimVm>();
  private readonly tasks = new Map<string, SimTask>();
  private readonly pools = new Map<string, string>();
  private readonly users: Map<string, string>;
  private readonly tokens = new Map<string, string>();
  private ticketKey = randomBytes(TICKET_KEY_BYTES);
  private faults: Array<{ id: string; rule: SimFaultRule; seen: number; hits: number }> = [];
  private nextPid = 1000;

  private readonly consoles: SimVncConsoles;
  private readonly upgrades = new WebSocketServer({ noServer: true });
  readonly requests: SimRequestRecord[] = [];
  readonly validationFailures: SimValidationFailure[] = [];
  readonly stats = { passwordLogins: 0, ticketRenewals: 0, unauthorized: 0, csrfRejected: 0 };

  constructor(options: ProxmoxSimulatorOptions = {}) {
    this.options = options;
    this.schema = PveSchema.load(options.schemaFile);
    this.latency = { ...DEFAULT_SIM_LATENCY, ...options.latency };
    for (const n of options.nodes ?? DEFAULT_NODES) {
      this.nodes.set(n.name, {
        name: n.name,
        maxmem: n.maxmem ?? 64 * GiB,
        baseMem: n.baseMem ?? 2 * GiB,
        maxcpu: n.maxcpu ?? 16,
        online: n.online ?? true,
      });
    }
    this.storages = options.storages ?? DEFAULT_STORAGES;
    this.users = new Map(Object.entries(options.users ?? { 'root@pam': 'simulator' }));
    for (const p of options.pools ?? ['hcp']) this.pools.set(p, '');
    for (const t of options.templates ?? DEFAULT_TEMPLATES) this.addTemplate(t);
    this.consoles = new SimVncConsoles({
      connectWaitMs: options.vncConnectWaitMs ?? 10_000,
      desktopName: (vmid) => `VM ${vmid}`,
    });
  }

  // -------------------------------------------------------------------------------------------------
  // Lifecycle

  async start(): Promise<{ url: string; caPem: string; fingerprint256: string }> {
    if (this.server) throw new Error('simulator already started');
    this.tlsMaterial = this.options.tls ?? generateTlsMaterial();
    const server = https.createServer({ cert: this.tlsMaterial.certPem, key: this.tlsMaterial.keyPem }, (req, res) => {
      void this.handle(req, res);
    });
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.on('tlsClientError', () => undefined);
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.handleUpgrade(req, socket, head);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port ?? 0, this.options.host ?? '127.0.0.1', () => resolve());
    });
    this.server = server;
    const address = server.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    this.url = `https://${host}:${address.port}`;
    return { url: this.url, caPem: this.tlsMaterial.caPem, fingerprint256: this.tlsMaterial.fingerprint256 };
  }

  async stop(): Promise<void> {
    this.consoles.closeAll();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get endpoint(): string {
    return this.url;
  }

  get tls(): SimulatorTlsMaterial {
    if (!this.tlsMaterial) throw new Error('simulator not started');
    return this.tlsMaterial;
  }

  // -------------------------------------------------------------------------------------------------
  // Setup and inspection for tests

  /** Creates an API token for a user (created with a random password if unknown). */
  createToken(userid = 'hcp@pve', tokenName = 'hcp'): { tokenId: string; secret: string; header: string } {
    if (!this.users.has(userid)) this.users.set(userid, randomUUID());
    const tokenId = `${userid}!${tokenName}`;
    const secret = randomUUID();
    this.tokens.set(tokenId, secret);
    return { tokenId, secret, header: `PVEAPIToken=${tokenId}=${secret}` };
  }

  revokeToken(tokenId: string): void {
    this.tokens.delete(tokenId);
  }

  addUser(userid: string, password: string): void {
    this.users.set(userid, password);
  }

  /** Invalidates every ticket issued so far (as if the auth key had rotated). */
  revokeTickets(): void {
    this.ticketKey = randomBytes(TICKET_KEY_BYTES);
  }

  addFault(rule: SimFaultRule): string {
    const id = randomUUID();
    this.faults.push({ id, rule, seen: 0, hits: 0 });
    return id;
  }

  removeFault(id: string): void {
    this.faults = this.faults.filter((f) => f.id !== id);
  }

  clearFaults(): void {
    this.faults = [];
  }

  /** How often a fault fired. */
  faultHits(id: string): number {
    return this.faults.find((f) => f.id === id)?.hits ?? 0;
  }

  listVms(): SimVmView[] {
    return [...this.vms.values()].sort((a, b) => a.vmid - b.vmid).map((vm) => this.view(vm));
  }

  getVm(vmid: number): SimVmView | undefined {
    const vm = this.vms.get(vmid);
    return vm ? this.view(vm) : undefined;
  }

  /** VMs whose description carries this HCP id. */
  vmsByHcpId(hcpId: string): SimVmView[] {
    return this.listVms().filter((v) => v.hcp_id === hcpId);
  }

  listTasks(): SimTask[] {
    return [...this.tasks.values()].map((t) => ({ ...t, log: [...t.log] }));
  }

  /** Sets a config lock (`backup`, `migrate`, ...) for a while, as another Proxmox job would. */
  lockVm(vmid: number, lock: string, forMs: number): void {
    const vm = this.mustVm(vmid);
    vm.config.lock = lock;
    this.later(forMs, () => {
      if (this.vms.get(vmid) === vm && vm.config.lock === lock) delete vm.config.lock;
    });
  }

  /** Guest behaviour: `acpi: false` ignores shutdown requests; `agent: false` never starts the agent. */
  setGuest(vmid: number, guest: Partial<SimVm['guest']>): void {
    Object.assign(this.mustVm(vmid).guest, guest);
  }

  /** Creates a VM outside HCP (to take ids, to test lookups among foreign VMs). */
  addForeignVm(vmid: number, node = [...this.nodes.keys()][0], config: Record<string, string> = {}): void {
    if (this.vms.has(vmid)) throw new Error(`VM ${vmid} exists`);
    this.vms.set(vmid, this.newVm(vmid, node, { name: `foreign-${vmid}`, memory: '512', cores: '1', ...config }));
  }

  setNodeOnline(node: string, online: boolean): void {
    const n = this.nodes.get(node);
    if (!n) throw new Error(`no node ${node}`);
    n.online = online;
  }

  /** Open vncwebsocket connections (of one VM, or all). */
  openConsoleConnections(vmid?: number): number {
    return this.consoles.openConnections(vmid);
  }

  /** Every VNC ticket handed out so far. */
  vncTickets(): string[] {
    return this.consoles.tickets();
  }

  /** VNC passwords vncproxy answered so far. */
  vncPasswords(): string[] {
    return this.consoles.passwords();
  }

  /** Moves the issue time of every VNC ticket `ms` into the past (negative: future), to test its validity window. */
  backdateVncTickets(ms: number): void {
    this.consoles.backdate(ms);
  }

  resetLog(): void {
    this.requests.length = 0;
    this.validationFailures.length = 0;
  }

  // -------------------------------------------------------------------------------------------------
  // HTTP

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://simulator');
    const method = (req.method ?? 'GET').toUpperCase();
    if (url.pathname.startsWith('/_sim/')) return this.handleAdmin(req, res, url, method);
    const requestId = typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'] : undefined;
    const record: SimRequestRecord = {
      method,
      path: url.pathname,
      status: 0,
      auth: 'none',
      csrf: false,
      params: {},
      ...(requestId ? { request_id: requestId } : {}),
      at: Date.now(),
    };
    this.requests.push(record);
    if (this.requests.length > 10_000) this.requests.splice(0, 1000);

    const send = (status: number, payload: unknown, reason?: string) => {
      record.status = status;
      if (res.destroyed) return;
      const body = JSON.stringify(payload);
      res.writeHead(status, reason ?? (status === 200 ? 'OK' : undefined), {
        'Content-Type': 'application/json;charset=UTF-8',
        'Content-Length': Buffer.byteLength(body),
        'Cache-Control': 'max-age=0',
        Pragma: 'no-cache',
      });
      res.end(body);
    };
    const sendError = async (err: PveError) => {
      const answer = await this.errorAnswer(err);
      send(err.status, answer.body, answer.reason);
    };

    if (!url.pathname.startsWith('/api2/json/')) {
      return sendError(new PveError(501, `Method '${method} ${url.pathname}' not implemented`));
    }
    const rawPath = url.pathname.slice('/api2/json'.length);
    const matched = this.schema.match(method, rawPath);
    if (!matched) return sendError(new PveError(501, `Method '${method} ${rawPath}' not implemented`));
    record.endpoint = matched.endpoint.path;

    // Faults that act before anything is done.
    const faults = this.takeFaults(method, rawPath, matched.endpoint.path);
    for (const f of faults) {
      if (f.kind === 'delay') {
        if (f.ms === Infinity) return; // never answers; stop() closes the socket
        await this.wait(f.ms);
      }
    }
    if (this.latency.requestMs > 0) await this.wait(this.latency.requestMs * this.latency.scale);
    if (faults.some((f) => f.kind === 'drop')) {
      record.status = -1;
      req.socket.destroy();
      return;
    }
    const injected = faults.find((f) => f.kind === 'error') as Extract<SimFault, { kind: 'error' }> | undefined;
    if (injected) return sendError(new PveError(injected.status, injected.message, injected.errors));

    let bodyParams: Record<string, unknown>;
    let encoding: 'form' | 'json' = 'form';
    try {
      const body = await readBody(req);
      const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
      if (type === 'application/json' && body.length > 0) {
        encoding = 'json';
        const parsed = JSON.parse(body.toString('utf8')) as unknown;
        bodyParams =
          parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
      } else {
        bodyParams = Object.fromEntries(new URLSearchParams(body.toString('utf8')));
      }
    } catch {
      return sendError(new PveError(400, 'unable to parse request body'));
    }
    const queryParams: Record<string, unknown> = Object.fromEntries(url.searchParams);
    const params: Record<string, unknown> = { ...queryParams, ...bodyParams, ...matched.pathParams };
    record.params = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, k === 'password' ? '***' : v]));

    // Auth (the login itself needs none).
    let user = '';
    const isLogin = matched.endpoint.path === '/access/ticket';
    if (!isLogin) {
      try {
        const auth = this.authenticate(req, method, matched.endpoint);
        user = auth.user;
        record.auth = auth.kind;
        record.csrf = auth.csrf;
      } catch (err) {
        if (err instanceof PveError) return sendError(err);
        throw err;
      }
    }

    const errors = this.schema.validate(matched.endpoint, params, encoding);
    if (Object.keys(errors).length > 0) {
      this.validationFailures.push({ method, endpoint: matched.endpoint.path, errors });
      return sendError(new PveError(400, 'Parameter verification failed.', errors));
    }

    const ctx: RequestContext = {
      method,
      rawPath,
      endpoint: matched.endpoint,
      params: Object.fromEntries(
        Object.entries(params).map(([k, v]) => [k, typeof v === 'boolean' ? (v ? '1' : '0') : String(v)]),
      ),
      user,
      taskFault: (faults.find((f) => f.kind === 'task-fail') as { message: string } | undefined)?.message,
      stealVmid: faults.some((f) => f.kind === 'steal-vmid'),
    };
    let data: unknown;
    try {
      data = this.route(ctx);
    } catch (err) {
      if (err instanceof PveError) return sendError(err);
      return sendError(new PveError(500, `simulator: ${(err as Error).message}`));
    }
    if (faults.some((f) => f.kind === 'drop-after')) {
      record.status = -1;
      req.socket.destroy();
      return;
    }
    send(200, { data: data === undefined ? null : data });
  }

  /** How Proxmox answers an error: reason phrase = first line of the message, body with message and errors. */
  private async errorAnswer(err: PveError): Promise<{ reason?: string; body: Record<string, unknown> }> {
    if (err.status === 401) {
      this.stats.unauthorized++;
      if (this.options.unauthorizedDelayMs) await this.wait(this.options.unauthorizedDelayMs);
    }
    const message = err.message.endsWith('\n') ? err.message : `${err.message}\n`;
    // The reason phrase is the message's first line; a reason must stay on one line.
    const reason = message.split('\n')[0].replace(/[^\x20-\x7e]/g, ' ') || undefined;
    const body: Record<string, unknown> = { data: null };
    if (err.errors) body.errors = err.errors;
    if (!this.options.legacyErrors) body.message = message;
    return { reason, body };
  }

  /**
   * The websocket upgrade of `GET .../vncwebsocket`: the same checks as any call (schema, auth), then
   * the VNC ticket must have been issued to this identity for this VM and port, recently, and not used.
   */
  private async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => undefined);
    const url = new URL(req.url ?? '/', 'https://simulator');
    const record: SimRequestRecord = {
      method: 'GET',
      path: url.pathname,
      status: 0,
      auth: 'none',
      csrf: false,
      params: {},
      at: Date.now(),
    };
    this.requests.push(record);
    const refuse = async (err: PveError) => {
      const { reason, body } = await this.errorAnswer(err);
      record.status = err.status;
      const text = JSON.stringify(body);
      socket.end(
        `HTTP/1.1 ${err.status} ${reason ?? 'Error'}\r\nContent-Type: application/json;charset=UTF-8\r\n` +
          `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
      );
    };
    const rawPath = url.pathname.startsWith('/api2/json/') ? url.pathname.slice('/api2/json'.length) : undefined;
    const matched = rawPath ? this.schema.match('GET', rawPath) : undefined;
    if (!rawPath || !matched || matched.endpoint.path !== '/nodes/{node}/qemu/{vmid}/vncwebsocket') {
      return refuse(new PveError(501, `Method 'GET ${url.pathname}' not implemented (no websocket here)`));
    }
    record.endpoint = matched.endpoint.path;
    const faults = this.takeFaults('GET', rawPath, matched.endpoint.path);
    if (faults.some((f) => f.kind === 'delay' && f.ms === Infinity)) return;
    for (const f of faults) if (f.kind === 'delay') await this.wait(f.ms);
    if (faults.some((f) => f.kind === 'drop' || f.kind === 'drop-after')) {
      record.status = -1;
      socket.destroy();
      return;
    }
    const injected = faults.find((f) => f.kind === 'error') as Extract<SimFault, { kind: 'error' }> | undefined;
    if (injected) return refuse(new PveError(injected.status, injected.message, injected.errors));

    const params: Record<string, unknown> = { ...Object.fromEntries(url.searchParams), ...matched.pathParams };
    record.params = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, k === 'vncticket' ? '***' : v]));
    let user: string;
    try {
      const auth = this.authenticate(req, 'GET', matched.endpoint);
      user = auth.user;
      record.auth = auth.kind;
    } catch (err) {
      if (err instanceof PveError) return refuse(err);
      throw err;
    }
    const errors = this.schema.validate(matched.endpoint, params, 'form');
    if (Object.keys(errors).length > 0) {
      this.validationFailures.push({ method: 'GET', endpoint: matched.endpoint.path, errors });
      return refuse(new PveError(400, 'Parameter verification failed.', errors));
    }
    const p = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)]));
    let grant: ReturnType<SimVncConsoles['redeem']>;
    try {
      const vm = this.vmOn(p.node, p.vmid);
      if (!vm.running) throw new PveError(500, `VM ${vm.vmid} not running`);
      grant = this.consoles.redeem(p.vncticket, user, vm.node, vm.vmid, Number(p.port));
      if (!grant) throw new PveError(401, 'permission denied - invalid vnc ticket');
    } catch (err) {
      if (err instanceof PveError) return refuse(err);
      throw err;
    }
    const accepted = grant;
    record.status = 101;
    this.upgrades.handleUpgrade(req, socket, head, (ws) => this.consoles.attach(accepted, ws));
  }

  private takeFaults(method: string, rawPath: string, template: string): SimFault[] {
    const fired: SimFault[] = [];
    for (const f of this.faults) {
      const r = f.rule;
      if (r.method && r.method.toUpperCase() !== method) continue;
      if (r.path !== undefined) {
        const ok =
          r.path instanceof RegExp
            ? r.path.test(rawPath) || r.path.test(template)
            : r.path === rawPath || r.path === template;
        if (!ok) continue;
      }
      f.seen++;
      if (r.skip !== undefined && f.seen <= r.skip) continue;
      if (r.times !== undefined && f.hits >= r.times) continue;
      f.hits++;
      fired.push(r);
    }
    return fired;
  }

  private authenticate(
    req: IncomingMessage,
    method: string,
    endpoint: PveEndpoint,
  ): { user: string; kind: 'token' | 'ticket'; csrf: boolean } {
    const authorization = req.headers.authorization ?? '';
    const token = /^PVEAPIToken=([^=\s]+)=(\S+)$/.exec(authorization);
    if (token) {
      const expected = this.tokens.get(token[1]);
      if (!expected || !safeEqual(expected, token[2])) throw new PveError(401, 'authentication failure');
      if (endpoint.allowtoken === 0) {
        throw new PveError(
          403,
          `Permission check failed (URI '${endpoint.path}' not available with API token, need proper ticket.)`,
        );
      }
      return { user: token[1], kind: 'token', csrf: false };
    }
    const cookie = /(?:^|;\s*)PVEAuthCookie=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    const headerTicket = /^PVEAuthCookie=(\S+)$/.exec(authorization)?.[1];
    const raw = cookie ?? headerTicket;
    if (!raw) throw new PveError(401, 'No ticket');
    const user = this.verifyTicket(decodeURIComponent(raw));
    if (!user) throw new PveError(401, 'authentication failure');
    let csrf = false;
    if (method !== 'GET') {
      const header = req.headers.csrfpreventiontoken;
      const value = Array.isArray(header) ? header[0] : header;
      if (!value || !this.verifyCsrf(value, user)) {
        this.stats.csrfRejected++;
        throw new PveError(401, 'Permission denied - invalid csrf token');
      }
      csrf = true;
    }
    return { user, kind: 'ticket', csrf };
  }

  private issueTicket(user: string): { ticket: string; csrf: string } {
    const time = hex(Math.floor(Date.now() / 1000));
    const plain = `PVE:${user}:${time}`;
    const sig = createHmac('sha256', this.ticketKey).update(plain).digest('base64');
    const csrfSig = createHmac('sha256', this.ticketKey).update(`${time}:${user}`).digest('base64').replace(/=+$/, '');
    return { ticket: `${plain}::${sig}`, csrf: `${time}:${csrfSig}` };
  }

  private verifyTicket(ticket: string): string | undefined {
    const m = /^PVE:([^:]+):([0-9A-F]{8})::(.+)$/.exec(ticket);
    if (!m) return undefined;
    const expected = createHmac('sha256', this.ticketKey).update(`PVE:${m[1]}:${m[2]}`).digest('base64');
    if (!safeEqual(expected, m[3])) return undefined;
    const issued = parseInt(m[2], 16) * 1000;
    const lifetime = this.options.ticketLifetimeMs ?? 2 * 60 * 60_000;
    // Proxmox allows a few minutes of clock skew into the future.
    if (Date.now() - issued > lifetime || issued - Date.now() > 5 * 60_000) return undefined;
    return m[1];
  }

  private verifyCsrf(token: string, user: string): boolean {
    const m = /^([0-9A-F]{8}):(.+)$/.exec(token);
    if (!m) return false;
    const expected = createHmac('sha256', this.ticketKey).update(`${m[1]}:${user}`).digest('base64').replace(/=+$/, '');
    return safeEqual(expected, m[2]);
  }

  // -------------------------------------------------------------------------------------------------
  // Routing

  private route(c: RequestContext): unknown {
    const p = c.params;
    const key = `${c.method} ${c.endpoint.path}`;
    switch (key) {
      case 'GET /version':
        return { version: '9.1.3', release: '9.1', repoid: 'simulator' };
      case 'GET /access/ticket':
        return null;
      case 'POST /access/ticket':
        return this.login(p);
      case 'GET /cluster/resources':
        return this.clusterResources(p.type);
      case 'GET /cluster/nextid':
        return this.nextId(p.vmid);
      case 'GET /cluster/tasks':
        return [...this.tasks.values()].map((t) => this.taskStatus(t));
      case 'GET /cluster/ha/resources':
        return [];
      case 'GET /nodes':
        return [...this.nodes.values()].map((n) => ({
          node: n.name,
          id: `node/${n.name}`,
          type: 'node',
          status: n.online ? 'online' : 'offline',
          maxmem: n.maxmem,
          mem: this.nodeMem(n),
          maxcpu: n.maxcpu,
          cpu: 0.02,
          uptime: 86_400,
          level: '',
          ssl_fingerprint: this.tlsMaterial?.fingerprint256,
        }));
      case 'GET /nodes/{node}/status': {
        const n = this.mustNode(p.node);
        return {
          memory: { total: n.maxmem, used: this.nodeMem(n), free: n.maxmem - this.nodeMem(n) },
          cpu: 0.02,
          cpuinfo: { cpus: n.maxcpu, model: 'Simulated CPU', sockets: 1 },
          uptime: 86_400,
          pveversion: 'pve-manager/9.1.3/simulator',
          kversion: 'Linux 6.14 (simulator)',
        };
      }
      case 'GET /nodes/{node}/qemu':
        this.mustNode(p.node);
        return [...this.vms.values()]
          .filter((vm) => vm.node === p.node)
          .map((vm) => ({
            vmid: vm.vmid,
            name: vm.config.name,
            status: vm.running ? 'running' : 'stopped',
            ...(p.full === '1' ? { qmpstatus: this.qmpstatus(vm) } : {}),
            template: vm.config.template === '1' ? 1 : undefined,
            tags: vm.config.tags,
            lock: vm.config.lock,
            cpus: Number(vm.config.cores ?? 1),
            maxmem: memoryMiB(vm.config.memory) * 1024 ** 2,
            maxdisk: this.disks(vm).total,
            uptime: vm.running && vm.startedAt ? Math.floor((Date.now() - vm.startedAt) / 1000) : 0,
          }));
      case 'POST /nodes/{node}/qemu':
        return this.createVm(c);
      case 'DELETE /nodes/{node}/qemu/{vmid}':
        return this.destroyVm(c);
      case 'GET /nodes/{node}/qemu/{vmid}/config':
        return this.readConfig(this.vmOn(p.node, p.vmid), p.current === '1');
      case 'POST /nodes/{node}/qemu/{vmid}/config':
        this.updateConfig(c);
        return this.startTask(c, this.vmOn(p.node, p.vmid).node, 'qmconfig', p.vmid, 0, () => undefined);
      case 'PUT /nodes/{node}/qemu/{vmid}/config':
        this.updateConfig(c);
        return null;
      case 'POST /nodes/{node}/qemu/{vmid}/clone':
        return this.cloneVm(c);
      case 'POST /nodes/{node}/qemu/{vmid}/template':
        return this.makeTemplate(c);
      case 'GET /nodes/{node}/qemu/{vmid}/status/current':
        return this.currentStatus(this.vmOn(p.node, p.vmid));
      case 'POST /nodes/{node}/qemu/{vmid}/status/start':
        return this.powerStart(c);
      case 'POST /nodes/{node}/qemu/{vmid}/status/stop':
        return this.powerStop(c);
      case 'POST /nodes/{node}/qemu/{vmid}/status/shutdown':
        return this.powerShutdown(c);
      case 'POST /nodes/{node}/qemu/{vmid}/status/reboot':
        return this.powerReboot(c, 'qmreboot', this.latency.rebootMs);
      case 'POST /nodes/{node}/qemu/{vmid}/status/reset':
        return this.powerReboot(c, 'qmreset', this.latency.resetMs);
      case 'POST /nodes/{node}/qemu/{vmid}/status/suspend':
        return this.powerSuspend(c, true);
      case 'POST /nodes/{node}/qemu/{vmid}/status/resume':
        return this.powerSuspend(c, false);
      case 'GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces':
        return { result: this.agentInterfaces(this.agentReady(this.vmOn(p.node, p.vmid))) };
      case 'POST /nodes/{node}/qemu/{vmid}/agent/ping':
        this.agentReady(this.vmOn(p.node, p.vmid));
        return { result: {} };
      case 'POST /nodes/{node}/qemu/{vmid}/vncproxy':
        return this.vncProxy(c);
      case 'POST /nodes/{node}/qemu/{vmid}/termproxy':
        return this.termProxy(c);
      case 'GET /nodes/{node}/qemu/{vmid}/vncwebsocket':
        // pveproxy answers a plain GET with a parameter error: the call only works as an upgrade.
        throw new PveError(400, 'Parameter verification failed.', {
          upgrade: 'vncwebsocket needs a WebSocket upgrade',
        });
      case 'POST /nodes/{node}/qemu/{vmid}/spiceproxy':
        return this.spiceProxy(c);
      case 'PUT /nodes/{node}/qemu/{vmid}/resize':
        return this.resize(c);
      case 'GET /nodes/{node}/qemu/{vmid}/snapshot': {
        const vm = this.vmOn(p.node, p.vmid);
        return [
          ...vm.snapshots.map((s) => ({ name: s.name, description: s.description, snaptime: s.snaptime })),
          {
            name: 'current',
            description: 'You are here!',
            running: vm.running ? 1 : 0,
            ...(vm.snapshots.length ? { parent: vm.snapshots[vm.snapshots.length - 1].name } : {}),
          },
        ];
      }
      case 'POST /nodes/{node}/qemu/{vmid}/snapshot':
        return this.snapshot(c);
      case 'GET /nodes/{node}/tasks/{upid}/status':
        return this.taskStatus(this.mustTask(p.node, p.upid));
      case 'GET /nodes/{node}/tasks/{upid}/log': {
        const t = this.mustTask(p.node, p.upid);
        const start = Number(p.start ?? 0);
        const limit = Number(p.limit ?? 50);
        const lines = t.log.length > 0 ? t.log : ['no content'];
        return lines.slice(start, start + limit).map((text, i) => ({ n: start + i + 1, t: text }));
      }
      case 'GET /nodes/{node}/storage':
        this.mustNode(p.node);
        return this.storages
          .filter((s) => !s.nodes || s.nodes.includes(p.node))
          .filter((s) => !p.storage || s.storage === p.storage)
          .filter((s) => !p.content || s.content.split(',').includes(p.content))
          .map((s) => ({
            storage: s.storage,
            type: s.type,
            content: s.content,
            active: 1,
            enabled: 1,
            shared: s.shared ? 1 : 0,
            total: s.total ?? 100 * GiB,
            used: this.storageUsed(s.storage, p.node),
            avail: (s.total ?? 100 * GiB) - this.storageUsed(s.storage, p.node),
          }));
      case 'GET /nodes/{node}/storage/{storage}/content':
        return this.storageContent(p.node, p.storage, p.vmid);
      case 'GET /pools':
        return [...this.pools.entries()]
          .filter(([id]) => !p.poolid || id === p.poolid)
          .map(([poolid, comment]) => ({ poolid, ...(comment ? { comment } : {}) }));
      case 'POST /pools':
        if (this.pools.has(p.poolid)) throw new PveError(500, `create pool failed: pool '${p.poolid}' already exists`);
        this.pools.set(p.poolid, p.comment ?? '');
        return null;
      case 'PUT /pools':
        if (!this.pools.has(p.poolid)) throw new PveError(500, `pool '${p.poolid}' does not exist`);
        if (p.comment !== undefined) this.pools.set(p.poolid, p.comment);
        return null;
      case 'DELETE /pools':
        if (!this.pools.has(p.poolid)) throw new PveError(500, `pool '${p.poolid}' does not exist`);
        this.pools.delete(p.poolid);
        return null;
      default:
        throw new PveError(501, `Method '${c.method} ${c.rawPath}' not implemented (in the simulator)`);
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Handlers

  private login(p: Record<string, string>): unknown {
    let username = p.username;
    if (!username.includes('@') && p.realm) username = `${username}@${p.realm}`;
    // Renewal: the current ticket in place of the password.
    const fromTicket = p.password.startsWith('PVE:') ? this.verifyTicket(p.password) : undefined;
    if (fromTicket && fromTicket === username) {
      this.stats.ticketRenewals++;
    } else {
      const expected = this.users.get(username);
      if (!expected || !safeEqual(expected, p.password)) throw new PveError(401, 'authentication failure');
      this.stats.passwordLogins++;
    }
    const { ticket, csrf } = this.issueTicket(username);
    return { username, ticket, CSRFPreventionToken: csrf, clustername: this.options.clusterName ?? 'simulator' };
  }

  private clusterResources(type?: string): unknown[] {
    const out: unknown[] = [];
    if (!type || type === 'node') {
      for (const n of this.nodes.values()) {
        out.push({
          id: `node/${n.name}`,
          type: 'node',
          node: n.name,
          status: n.online ? 'online' : 'offline',
          maxmem: n.maxmem,
          mem: this.nodeMem(n),
          maxcpu: n.maxcpu,
          cpu: 0.02,
          uptime: 86_400,
          level: '',
          maxdisk: 100 * GiB,
          disk: 10 * GiB,
        });
      }
    }
    if (!type || type === 'vm') {
      for (const vm of [...this.vms.values()].sort((a, b) => a.vmid - b.vmid)) {
        const node = this.nodes.get(vm.node)!;
        out.push({
          id: `qemu/${vm.vmid}`,
          type: 'qemu',
          vmid: vm.vmid,
          node: vm.node,
          name: vm.config.name,
          status: node.online ? (vm.running ? 'running' : 'stopped') : 'unknown',
          template: vm.config.template === '1' ? 1 : 0,
          ...(vm.config.tags ? { tags: vm.config.tags } : {}),
          ...(vm.config.lock ? { lock: vm.config.lock } : {}),
          ...(vm.pool ? { pool: vm.pool } : {}),
          maxmem: memoryMiB(vm.config.memory) * 1024 ** 2,
          mem: vm.running ? memoryMiB(vm.config.memory) * 1024 ** 2 * 0.5 : 0,
          maxcpu: Number(vm.config.cores ?? 1),
          cpu: 0,
          maxdisk: this.disks(vm).total,
          disk: 0,
          uptime: vm.running && vm.startedAt ? Math.floor((Date.now() - vm.startedAt) / 1000) : 0,
          hastate: undefined,
        });
      }
    }
    if (!type || type === 'storage') {
      for (const n of this.nodes.values()) {
        for (const s of this.storages) {
          if (s.nodes && !s.nodes.includes(n.name)) continue;
          out.push({
            id: `storage/${n.name}/${s.storage}`,
            type: 'storage',
            node: n.name,
            storage: s.storage,
            status: 'available',
            shared: s.shared ? 1 : 0,
            content: s.content,
            plugintype: s.type,
            maxdisk: s.total ?? 100 * GiB,
            disk: this.storageUsed(s.storage, n.name),
          });
        }
      }
    }
    return out;
  }

  private nextId(vmid?: string): number {
    if (vmid !== undefined) {
      if (this.vms.has(Number(vmid)))
        throw new PveError(400, 'Parameter verification failed.', { vmid: `VM ${vmid} already exists` });
      return Number(vmid);
    }
    for (let id = 100; ; id++) if (!this.vms.has(id)) return id;
  }

  private createVm(c: RequestContext): unknown {
    const p = c.params;
    const node = this.mustNode(p.node);
    const vmid = Number(p.vmid);
    if (this.vms.has(vmid)) throw new PveError(500, `unable to create VM ${vmid}: config file already exists`);
    if (p.sshkeys !== undefined) checkSshKeys(p.sshkeys);
    const config: Record<string, string> = {};
    for (const [k, v] of Object.entries(p))
      if (
        !['node', 'vmid', 'start', 'pool', 'storage', 'unique', 'force', 'archive', 'bwlimit', 'live-restore'].includes(
          k,
        )
      )
        config[k] = v;
    config.lock = 'create';
    for (const [k, v] of Object.entries(config)) {
      // `scsi0: local-lvm:8` allocates an 8 GiB disk.
      const m = DISK_KEY.test(k) ? /^([^:,]+):(\d+)(,.*)?$/.exec(v) : null;
      if (m) config[k] = `${m[1]}:vm-${vmid}-disk-${k.replace(/\D/g, '')},size=${m[2]}G${m[3] ?? ''}`;
    }
    for (const [k, v] of Object.entries(config)) if (NET_KEY.test(k)) config[k] = this.withMac(v);
    const vm = this.newVm(vmid, node.name, config);
    if (p.pool) vm.pool = p.pool;
    this.vms.set(vmid, vm);
    return this.startTask(c, node.name, 'qmcreate', String(vmid), this.latency.createMs, (task) => {
      if (task.failed) {
        this.vms.delete(vmid);
        return;
      }
      delete vm.config.lock;
      if (p.start === '1') this.bootVm(vm);
    });
  }

  private cloneVm(c: RequestContext): unknown {
    const p = c.params;
    const source = this.vmOn(p.node, p.vmid);
    const newid = Number(p.newid);
    const targetNode = p.target ? this.mustNode(p.target) : this.mustNode(p.node);
    if (!targetNode.online) throw new PveError(500, `target node '${targetNode.name}' is not online`);
    if (c.stealVmid && !this.vms.has(newid)) {
      // Another client's clone got there first.
      this.vms.set(newid, this.newVm(newid, targetNode.name, { name: `raced-${newid}`, memory: '512', cores: '1' }));
    }
    if (this.vms.has(newid))
      throw new PveError(500, `VM ${newid} already exists on node '${this.vms.get(newid)!.node}'`);
    if (source.config.lock) throw new PveError(500, `VM is locked (${source.config.lock})`);
    const isTemplate = source.config.template === '1';
    const full = p.full !== undefined ? p.full === '1' : !isTemplate;
    if (!full && !isTemplate)
      throw new PveError(500, 'Linked clone feature is not supported for drives of a VM that is not a template');
    if (!full && p.storage)
      throw new PveError(400, 'Parameter verification failed.', {
        storage: 'Linked clones do not support storage parameter',
      });
    if (p.pool && !this.pools.has(p.pool)) throw new PveError(500, `pool '${p.pool}' does not exist`);

    if (targetNode.name !== source.node) {
      // qemu-server copies every source volume from the source node: each must be on shared storage.
      for (const [k, v] of Object.entries(source.config)) {
        if (!DISK_KEY.test(k) || !(isDisk(k, v) || /cloudinit/.test(v))) continue;
        const storageId = (parseProps(v)[0]?.[1] ?? '').split(':')[0];
        if (!this.storages.find((s) => s.storage === storageId)?.shared) {
          throw new PveError(500, `can't clone VM to node '${targetNode.name}' (VM uses local storage)`);
        }
      }
    }
    const disks = Object.entries(source.config).filter(([k, v]) => isDisk(k, v));
    for (const [, value] of disks) {
      const volume = parseProps(value)[0]?.[1] ?? '';
      const storageId = p.storage ?? volume.split(':')[0];
      const storage = this.storages.find((s) => s.storage === storageId);
      if (!storage || (storage.nodes && !storage.nodes.includes(targetNode.name))) {
        throw new PveError(500, `storage '${storageId}' is not available on node '${targetNode.name}'`);
      }
      if (!storage.content.split(',').includes('images'))
        throw new PveError(500, `storage '${storageId}' does not support vm images`);
      if (targetNode.name !== source.node && !storage.shared)
        throw new PveError(500, `Can't clone to non-shared storage '${storageId}'`);
    }

    const config: Record<string, string> = {};
    let diskIndex = 0;
    for (const [k, v] of Object.entries(source.config)) {
      if (k === 'template' || k === 'lock' || k === 'digest') continue;
      if (k === 'description' || k === 'name') continue;
      if (DISK_KEY.test(k) && (isDisk(k, v) || /cloudinit/.test(v))) {
        const entries = parseProps(v);
        const volume = entries[0][1];
        const [store, vol] = volume.split(':');
        const target = /cloudinit/.test(v)
          ? `${p.storage && full ? p.storage : store}:vm-${newid}-cloudinit`
          : full
            ? `${p.storage ?? store}:vm-${newid}-disk-${diskIndex++}`
            : `${store}:${vol}/vm-${newid}-disk-${diskIndex++}`;
        entries[0] = ['', target];
        config[k] = printProps(entries);
        continue;
      }
      // Clones get new MAC addresses.
      config[k] = NET_KEY.test(k) ? this.withMac(v, true) : v;
    }
    config.name = p.name ?? `Copy-of-VM-${source.config.name ?? source.vmid}`;
    if (p.description !== undefined) config.description = p.description;
    else if (source.config.description) config.description = source.config.description;
    // Until the copy ends the new VM's config holds only the lock; name and description come last.
    const vm = this.newVm(newid, targetNode.name, { lock: 'clone' });
    vm.pendingConfig = config;
    vm.guest = { ...source.guest };
    if (p.pool) vm.pool = p.pool;
    this.vms.set(newid, vm);
    // The task id is the source VMID (as in Proxmox), on the source's node.
    return this.startTask(
      c,
      source.node,
      'qmclone',
      String(source.vmid),
      full ? this.latency.cloneFullMs : this.latency.cloneLinkedMs,
      (task) => {
        if (task.failed) {
          // A failed clone removes its target.
          if (this.vms.get(newid) === vm) this.vms.delete(newid);
          task.exit = `clone failed: ${task.exit}`;
          return;
        }
        if (this.vms.get(newid) === vm) {
          vm.config = vm.pendingConfig ?? {};
          vm.pendingConfig = undefined;
        }
      },
    );
  }

  private makeTemplate(c: RequestContext): unknown {
    const vm = this.vmOn(c.params.node, c.params.vmid);
    if (vm.running) throw new PveError(500, "you can't convert a running VM to a template");
    if (vm.config.template === '1') throw new PveError(500, "you can't convert a template to a template");
    this.checkConfigLock(vm);
    return this.startTask(c, vm.node, 'qmtemplate', String(vm.vmid), this.latency.templateMs, (task) => {
      if (task.failed) return;
      vm.config.template = '1';
      for (const [k, v] of Object.entries(vm.config)) {
        if (isDisk(k, v)) vm.config[k] = v.replace(`vm-${vm.vmid}-disk-`, `base-${vm.vmid}-disk-`);
      }
    });
  }

  private readConfig(vm: SimVm, _current: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const returns =
      this.schema.endpoints.find((e) => e.method === 'GET' && e.path === '/nodes/{node}/qemu/{vmid}/config')?.returns
        ?.properties ?? {};
    for (const [k, v] of Object.entries(vm.config)) {
      const type = returns[k]?.type ?? returns[k.replace(/\d+$/, '[n]')]?.type;
      out[k] =
        (type === 'integer' || type === 'boolean' || type === 'number') && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
    }
    out.digest = this.digest(vm);
    return out;
  }

  private digest(vm: SimVm): string {
    const text = Object.entries(vm.config)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n');
    return createHash('sha1').update(text).digest('hex');
  }

  private updateConfig(c: RequestContext): void {
    const p = c.params;
    const vm = this.vmOn(p.node, p.vmid);
    if (p.skiplock !== '1') this.checkConfigLock(vm);
    this.checkFileLock(vm);
    if (p.digest && p.digest !== this.digest(vm))
      throw new PveError(500, 'detected modified configuration - file changed by other user? Try again.');
    if (p.sshkeys !== undefined) checkSshKeys(p.sshkeys);
    const skip = new Set(['node', 'vmid', 'digest', 'delete', 'revert', 'skiplock', 'force', 'background_delay']);
    for (const [k, v] of Object.entries(p)) {
      if (skip.has(k)) continue;
      // Changes to a running VM apply at once here; Proxmox keeps some pending until the next start.
      vm.config[k] = NET_KEY.test(k) ? this.withMac(v) : v;
      if (k === 'agent' && vm.running && agentOn(v) && !vm.agentReadyAt) vm.agentReadyAt = Date.now();
    }
    for (const k of (p.delete ?? '').split(/[,;\s]+/).filter((x) => x !== '')) delete vm.config[k];
  }

  private resize(c: RequestContext): unknown {
    const p = c.params;
    const vm = this.vmOn(p.node, p.vmid);
    if (p.skiplock !== '1') this.checkConfigLock(vm);
    this.checkFileLock(vm);
    const value = vm.config[p.disk];
    if (!value || !isDisk(p.disk, value)) throw new PveError(500, `disk '${p.disk}' does not exist`);
    const entries = parseProps(value);
    const current = parseSize(entries.find(([k]) => k === 'size')?.[1]) ?? 0;
    const relative = p.size.startsWith('+');
    const amount = parseSize(p.size.replace(/^\+/, ''));
    if (amount === undefined)
      throw new PveError(400, 'Parameter verification failed.', { size: 'value does not match the regex pattern' });
    const target = relative ? current + amount : amount;
    if (target < current) throw new PveError(500, 'shrinking disks is not supported');
    return this.startTask(
      c,
      vm.node,
      'resize',
      String(vm.vmid),
      this.latency.resizeMs,
      (task) => {
        if (task.failed) return;
        const now = parseProps(vm.config[p.disk]);
        const at = now.findIndex(([k]) => k === 'size');
        if (at >= 0) now[at] = ['size', formatSize(target)];
        else now.push(['size', formatSize(target)]);
        vm.config[p.disk] = printProps(now);
      },
      { flock: vm },
    );
  }

  private destroyVm(c: RequestContext): unknown {
    const p = c.params;
    const vm = this.vmOn(p.node, p.vmid);
    if (vm.config.protection === '1') throw new PveError(500, "can't remove VM - protection mode enabled");
    if (p.skiplock !== '1') this.checkConfigLock(vm);
    this.checkFileLock(vm);
    if (vm.running) throw new PveError(500, `VM ${vm.vmid} is running - destroy failed`);
    return this.startTask(
      c,
      vm.node,
      'qmdestroy',
      String(vm.vmid),
      this.latency.destroyMs,
      (task) => {
        if (task.failed) {
          delete vm.config.lock;
          return;
        }
        this.vms.delete(vm.vmid);
        this.consoles.closeForVm(vm.vmid);
      },
      { flock: vm, onStart: () => (vm.config.lock = 'destroyed') },
    );
  }

  private currentStatus(vm: SimVm): Record<string, unknown> {
    return {
      vmid: vm.vmid,
      name: vm.config.name,
      status: vm.running ? 'running' : 'stopped',
      qmpstatus: this.qmpstatus(vm),
      ...(agentOn(vm.config.agent) ? { agent: 1 } : {}),
      ...(vm.config.lock ? { lock: vm.config.lock } : {}),
      ...(vm.config.tags ? { tags: vm.config.tags } : {}),
      ...(vm.config.template === '1' ? { template: 1 } : {}),
      cpus: Number(vm.config.cores ?? 1),
      maxmem: memoryMiB(vm.config.memory) * 1024 ** 2,
      mem: vm.running ? memoryMiB(vm.config.memory) * 1024 ** 2 * 0.5 : 0,
      maxdisk: this.disks(vm).total,
      uptime: vm.running && vm.startedAt ? Math.floor((Date.now() - vm.startedAt) / 1000) : 0,
      ...(vm.running ? { pid: 4242 + vm.vmid } : {}),
      ha: { managed: 0 },
    };
  }

  private powerStart(c: RequestContext): unknown {
    const vm = this.vmOn(c.params.node, c.params.vmid);
    if (vm.config.template === '1') throw new PveError(500, "you can't start a vm if it's a template");
    if (c.params.skiplock !== '1') this.checkConfigLock(vm);
    if (vm.running) throw new PveError(500, `VM ${vm.vmid} already running`);
    return this.startTask(
      c,
      vm.node,
      'qmstart',
      String(vm.vmid),
      this.latency.startMs,
      (task) => {
        if (!task.failed) this.bootVm(vm);
      },
      { flock: vm },
    );
  }

  private powerStop(c: RequestContext): unknown {
    const vm = this.vmOn(c.params.node, c.params.vmid);
    if (c.params.skiplock !== '1') this.checkConfigLock(vm);
    return this.startTask(
      c,
      vm.node,
      'qmstop',
      String(vm.vmid),
      this.latency.stopMs,
      (task) => {
        if (!task.failed) this.haltVm(vm);
      },
      { flock: vm },
    );
  }

  private powerShutdown(c: RequestContext): unknown {
    const vm = this.vmOn(c.params.node, c.params.vmid);
    if (c.params.skiplock !== '1') this.checkConfigLock(vm);
    if (!vm.running) throw new PveError(500, `VM ${vm.vmid} not running`);
    if (vm.paused) throw new PveError(500, 'VM is paused - cannot shutdown');
    const timeoutMs = (c.params.timeout !== undefined ? Number(c.params.timeout) : 60) * 1000;
    const force = c.params.forceStop === '1';
    const acpi = vm.guest.acpi;
    // A guest that ignores ACPI keeps the task busy for the whole timeout (real seconds, not scaled).
    const duration = acpi ? Math.min(this.latency.shutdownMs * this.latency.scale, timeoutMs) : timeoutMs;
    return this.startTask(
      c,
      vm.node,
      'qmshutdown',
      String(vm.vmid),
      duration,
      (task) => {
        if (task.failed) return;
        if (acpi || force) {
          this.haltVm(vm);
          return;
        }
        task.failed = true;
        task.exit = 'VM quit/powerdown failed - got timeout';
      },
      { flock: vm, unscaled: true },
    );
  }

  private powerReboot(c: RequestContext, type: 'qmreboot' | 'qmreset', ms: number): unknown {
    const vm = this.vmOn(c.params.node, c.params.vmid);
    if (c.params.skiplock !== '1') this.checkConfigLock(vm);
    if (!vm.running) throw new PveError(500, `VM ${vm.vmid} not running`);
    if (type === 'qmreboot' && vm.paused) throw new PveError(500, 'VM is paused - cannot shutdown');
    return this.startTask(
      c,
      vm.node,
      type,
      String(vm.vmid),
      ms,
      (task) => {
        if (task.failed) return;
        vm.startedAt = Date.now();
        vm.paused = false;
        if (agentOn(vm.config.agent)) vm.agentReadyAt = Date.now() + this.latency.agentBootMs * this.latency.scale;
      },
      { flock: vm },
    );
  }

  private powerSuspend(c: RequestContext, suspend: boolean): unknown {
    const vm = this.vmOn(c.params.node, c.params.vmid);
    if (c.params.skiplock !== '1') this.checkConfigLock(vm);
    if (!vm.running) throw new PveError(500, `VM ${vm.vmid} not running`);
    return this.startTask(
      c,
      vm.node,
      suspend ? 'qmpause' : 'qmresume',
      String(vm.vmid),
      this.latency.suspendMs,
      (task) => {
        if (!task.failed) vm.paused = suspend;
      },
      { flock: vm },
    );
  }

  private agentReady(vm: SimVm): SimVm {
    if (!agentOn(vm.config.agent)) throw new PveError(500, 'No QEMU guest agent configured');
    if (!vm.running) throw new PveError(500, `VM ${vm.vmid} is not running`);
    if (!vm.guest.agent || vm.agentReadyAt === undefined || Date.now() < vm.agentReadyAt) {
      throw new PveError(500, 'QEMU guest agent is not running');
    }
    return vm;
  }

  /** The address a guest gets by DHCP: stable per VMID. */
  guestAddress(vmid: number): string {
    return `10.20.${Math.floor(vmid / 250) % 250}.${(vmid % 250) + 2}`;
  }

  private agentInterfaces(vm: SimVm): unknown[] {
    const out: unknown[] = [
      {
        name: 'lo',
        'hardware-address': '00:00:00:00:00:00',
        'ip-addresses': [
          { 'ip-address': '127.0.0.1', 'ip-address-type': 'ipv4', prefix: 8 },
          { 'ip-address': '::1', 'ip-address-type': 'ipv6', prefix: 128 },
        ],
        statistics: { 'rx-bytes': 0, 'tx-bytes': 0 },
      },
    ];
    const nets = Object.keys(vm.config)
      .filter((k) => NET_KEY.test(k))
      .sort();
    nets.forEach((key, i) => {
      const mac =
        parseProps(vm.config[key]).find(
          ([k, v]) => k !== '' && k !== 'bridge' && /^[0-9A-F]{2}(:[0-9A-F]{2}){5}$/i.test(v),
        )?.[1] ?? '';
      const addresses: unknown[] = [];
      if (i === 0) addresses.push({ 'ip-address': this.guestAddress(vm.vmid), 'ip-address-type': 'ipv4', prefix: 24 });
      addresses.push({
        'ip-address': `fe80::be24:11ff:fe${hex(vm.vmid & 0xff, 2).toLowerCase()}:${hex(i, 4).toLowerCase()}`,
        'ip-address-type': 'ipv6',
        prefix: 64,
      });
      out.push({
        name: `eth${i}`,
        'hardware-address': mac.toLowerCase(),
        'ip-addresses': addresses,
        statistics: { 'rx-bytes': 1024, 'tx-bytes': 2048 },
      });
    });
    return out;
  }

  private vncProxy(c: RequestContext): unknown {
    const vm = this.vmOn(c.params.node, c.params.vmid);
    if (!vm.running) throw new PveError(500, `VM ${vm.vmid} not running`);
    const task = this.openTask(c, vm.node, 'vncproxy', String(vm.vmid));
    const password = this.options.vncPasswords === false ? undefined : vncPassword();
    const grant = this.consoles.issue(c.user, vm.node, vm.vmid, password, (exit) => {
      if (task.status === 'running') this.endTask(task, exit);
    });
    if (!grant) {
      this.endTask(task, 'unable to find free port (5900-5999)');
      throw new PveError(500, 'unable to find free port (5900-5999)');
    }
    return {
      user: c.user,
      ticket: grant.ticket,
      port: grant.port,
      upid: task.upid,
      cert: this.tlsMaterial?.certPem ?? '',
      ...(password ? { password } : {}),
    };
  }

  private termProxy(c: RequestContext): unknown {
    const vm = this.vmOn(c.params.node, c.params.vmid);
    const upid = this.startTask(c, vm.node, 'vncproxy', String(vm.vmid), 10_000, () => undefined, { unscaled: true });
    return {
      user: c.user,
      ticket: `PVEVNC:${hex(Math.floor(Date.now() / 1000))}::${randomBytes(24).toString('base64')}`,
      port: 5900 + (vm.vmid % 100),
      upid,
    };
  }

  private spiceProxy(c: RequestContext): unknown {
    const vm = this.vmOn(c.params.node, c.params.vmid);
    if (!vm.running) throw new PveError(500, `VM ${vm.vmid} not running`);
    return {
      type: 'spice',
      host: `pvespiceproxy:${hex(Math.floor(Date.now() / 1000))}:${vm.vmid}:${vm.node}::${randomBytes(12).toString('hex')}`,
      password: randomBytes(12).toString('hex'),
      proxy: `http://${c.params.proxy ?? vm.node}:3128`,
      'tls-port': 61000,
      'host-subject': `OU=PVE Cluster Node,O=Proxmox Virtual Environment,CN=${vm.node}`,
      ca: this.tlsMaterial?.caPem ?? '',
      title: `VM ${vm.vmid}`,
      'delete-this-file': 1,
      'secure-attention': 'Ctrl+Alt+Ins',
      'release-cursor': 'Ctrl+Alt+R',
      'toggle-fullscreen': 'Shift+F11',
    };
  }

  private snapshot(c: RequestContext): unknown {
    const vm = this.vmOn(c.params.node, c.params.vmid);
    this.checkConfigLock(vm);
    if (vm.snapshots.some((s) => s.name === c.params.snapname))
      throw new PveError(500, `snapshot name '${c.params.snapname}' already used`);
    return this.startTask(
      c,
      vm.node,
      'qmsnapshot',
      String(vm.vmid),
      this.latency.snapshotMs,
      (task) => {
        if (!task.failed)
          vm.snapshots.push({
            name: c.params.snapname,
            description: c.params.description ?? '',
            snaptime: Math.floor(Date.now() / 1000),
          });
      },
      { flock: vm },
    );
  }

  private storageContent(node: string, storage: string, vmid?: string): unknown[] {
    this.mustNode(node);
    const out: unknown[] = [];
    for (const vm of this.vms.values()) {
      if (vmid && String(vm.vmid) !== vmid) continue;
      for (const [k, v] of Object.entries(vm.config)) {
        if (!DISK_KEY.test(k)) continue;
        const volume = parseProps(v)[0]?.[1] ?? '';
        if (!volume.startsWith(`${storage}:`)) continue;
        const shared = this.storages.find((s) => s.storage === storage)?.shared;
        if (!shared && vm.node !== node) continue;
        out.push({
          volid: volume,
          content: 'images',
          format: 'raw',
          size: parseSize(parseProps(v).find(([kk]) => kk === 'size')?.[1]) ?? 0,
          vmid: vm.vmid,
        });
      }
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------------
  // Tasks

  private startTask(
    c: RequestContext,
    node: string,
    type: string,
    id: string,
    durationMs: number,
    finish: (task: { failed: boolean; exit: string }) => void,
    options: { flock?: SimVm; onStart?: () => void; unscaled?: boolean } = {},
  ): string {
    const task = this.openTask(c, node, type, id);
    const upid = task.upid;
    const vm = options.flock;
    if (vm) {
      if (vm.flock && this.tasks.get(vm.flock)?.status === 'running') {
        // The worker would wait 10 s for the lock, then fail.
        const message = `can't lock file '/var/lock/qemu-server/lock-${vm.vmid}.conf' - got timeout`;
        this.later(Math.min(200, 10_000 * this.latency.scale), () => this.endTask(task, message));
        return upid;
      }
      vm.flock = upid;
    }
    options.onStart?.();
    const failWith = c.taskFault;
    const ms = options.unscaled ? durationMs : durationMs * this.latency.scale;
    this.later(ms, () => {
      const outcome = { failed: failWith !== undefined, exit: failWith ?? 'OK' };
      try {
        finish(outcome);
      } catch (err) {
        outcome.failed = true;
        outcome.exit = err instanceof TaskFailure ? err.message : `simulator: ${(err as Error).message}`;
      }
      if (vm && vm.flock === upid) vm.flock = undefined;
      this.endTask(task, outcome.failed ? outcome.exit : 'OK');
    });
    return upid;
  }

  /** A running task that ends when its owner calls endTask. */
  private openTask(c: RequestContext, node: string, type: string, id: string): SimTask {
    const pid = this.nextPid++;
    const starttime = Math.floor(Date.now() / 1000);
    const user = c.user || 'root@pam';
    const upid = `UPID:${node}:${hex(pid)}:${hex(pid * 7 + 100_000)}:${hex(starttime)}:${type}:${id}:${user}:`;
    const task: SimTask = {
      upid,
      node,
      pid,
      pstart: pid * 7 + 100_000,
      starttime,
      type,
      id,
      user,
      status: 'running',
      log: [],
    };
    this.tasks.set(upid, task);
    return task;
  }

  private endTask(task: SimTask, exit: string): void {
    task.status = 'stopped';
    task.exitstatus = exit;
    task.endtime = Math.floor(Date.now() / 1000);
    if (exit === 'OK') task.log.push('TASK OK');
    else task.log.push(`TASK ERROR: ${exit}`);
    if (this.tasks.size > 5000) {
      for (const [upid, t] of this.tasks) {
        if (t.status === 'stopped') this.tasks.delete(upid);
        if (this.tasks.size <= 4000) break;
      }
    }
  }

  private taskStatus(t: SimTask): Record<string, unknown> {
    return {
      upid: t.upid,
      node: t.node,
      pid: t.pid,
      pstart: t.pstart,
      starttime: t.starttime,
      type: t.type,
      id: t.id,
      user: t.user,
      status: t.status,
      ...(t.status === 'stopped' ? { exitstatus: t.exitstatus, endtime: t.endtime } : {}),
    };
  }

  private mustTask(node: string, upid: string): SimTask {
    const t = this.tasks.get(upid);
    if (!t || t.node !== node) throw new PveError(400, 'Parameter verification failed.', { upid: 'no such task' });
    return t;
  }

  /** A pause that stop() cancels (the request it delays is then never answered). */
  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => this.later(ms, resolve));
  }

  private later(ms: number, fn: () => void): void {
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        fn();
      },
      Math.max(0, ms),
    );
    this.timers.add(timer);
  }

  // -------------------------------------------------------------------------------------------------
  // Model helpers

  private addTemplate(t: SimTemplateSpec): void {
    if (!this.nodes.has(t.node)) throw new Error(`template ${t.vmid} on unknown node ${t.node}`);
    const storage = t.storage ?? 'local-lvm';
    const config: Record<string, string> = {
      name: t.name,
      template: '1',
      ostype: 'l26',
      cores: '1',
      memory: '1024',
      scsihw: 'virtio-scsi-single',
      scsi0: `${storage}:base-${t.vmid}-disk-0,iothread=1,size=${t.diskGb ?? 2}G`,
      ide2: `${t.cloudinitStorage ?? storage}:vm-${t.vmid}-cloudinit,media=cdrom`,
      boot: 'order=scsi0',
      net0: `virtio=${randomMac()},bridge=vmbr0`,
      serial0: 'socket',
      vga: 'serial0',
      ...(t.agent !== false ? { agent: '1' } : {}),
      ...(t.tags ? { tags: t.tags } : {}),
    };
    const vm = this.newVm(t.vmid, t.node, config);
    vm.guest.agent = t.agent !== false;
    this.vms.set(t.vmid, vm);
  }

  private newVm(vmid: number, node: string, config: Record<string, string>): SimVm {
    return { vmid, node, config, running: false, paused: false, guest: { acpi: true, agent: true }, snapshots: [] };
  }

  private bootVm(vm: SimVm): void {
    vm.running = true;
    vm.paused = false;
    vm.startedAt = Date.now();
    vm.agentReadyAt = agentOn(vm.config.agent) ? Date.now() + this.latency.agentBootMs * this.latency.scale : undefined;
  }

  private haltVm(vm: SimVm): void {
    this.consoles.closeForVm(vm.vmid);
    vm.running = false;
    vm.paused = false;
    vm.startedAt = undefined;
    vm.agentReadyAt = undefined;
  }

  private qmpstatus(vm: SimVm): string {
    if (!vm.running) return 'stopped';
    return vm.paused ? 'paused' : 'running';
  }

  private withMac(net: string, fresh = false): string {
    const entries = parseProps(net);
    const models = ['e1000', 'e1000e', 'virtio', 'rtl8139', 'vmxnet3'];
    const at = entries.findIndex(([k, v]) => models.includes(k) || (k === '' && models.includes(v)) || k === 'model');
    if (at < 0) return net;
    const [k, v] = entries[at];
    if (k === '' || k === 'model') {
      const model = v;
      const mac = entries.find(([kk]) => kk === 'macaddr')?.[1] ?? randomMac();
      const rest = entries.filter((_, i) => i !== at && entries[i][0] !== 'macaddr');
      return printProps([[model, mac], ...rest]);
    }
    if (fresh) entries[at] = [k, randomMac()];
    return printProps(entries);
  }

  private checkConfigLock(vm: SimVm): void {
    if (vm.config.lock) throw new PveError(500, `VM is locked (${vm.config.lock})`);
  }

  private checkFileLock(vm: SimVm): void {
    if (vm.flock && this.tasks.get(vm.flock)?.status === 'running') {
      throw new PveError(500, `can't lock file '/var/lock/qemu-server/lock-${vm.vmid}.conf' - got timeout`);
    }
  }

  private nodeMem(n: SimNode): number {
    let mem = n.baseMem;
    for (const vm of this.vms.values())
      if (vm.node === n.name && vm.running) mem += memoryMiB(vm.config.memory) * 1024 ** 2;
    return mem;
  }

  private storageUsed(storage: string, node: string): number {
    let used = 0;
    const shared = this.storages.find((s) => s.storage === storage)?.shared;
    for (const vm of this.vms.values()) {
      if (!shared && vm.node !== node) continue;
      for (const [k, v] of Object.entries(vm.config)) {
        if (isDisk(k, v) && v.startsWith(`${storage}:`))
          used += parseSize(parseProps(v).find(([kk]) => kk === 'size')?.[1]) ?? 0;
      }
    }
    return used;
  }

  private disks(vm: SimVm): { total: number; byKey: Record<string, number> } {
    const byKey: Record<string, number> = {};
    let total = 0;
    for (const [k, v] of Object.entries(vm.config)) {
      if (!isDisk(k, v)) continue;
      const size = parseSize(parseProps(v).find(([kk]) => kk === 'size')?.[1]) ?? 0;
      byKey[k] = size;
      total += size;
    }
    return { total, byKey };
  }

  private mustNode(name: string): SimNode {
    const node = this.nodes.get(name);
    if (!node)
      throw new PveError(
        500,
        `hostname lookup '${name}' failed - failed to get address info for: ${name}: Name or service not known`,
      );
    if (!node.online) throw new PveError(595, `Connection refused`);
    return node;
  }

  /** The VM on that node; Proxmox answers 500 "does not exist" for a VM on another node or none. */
  private vmOn(node: string, vmid: string): SimVm {
    this.mustNode(node);
    const vm = this.vms.get(Number(vmid));
    if (!vm || vm.node !== node)
      throw new PveError(500, `Configuration file 'nodes/${node}/qemu-server/${vmid}.conf' does not exist`);
    return vm;
  }

  private mustVm(vmid: number): SimVm {
    const vm = this.vms.get(vmid);
    if (!vm) throw new Error(`no VM ${vmid}`);
    return vm;
  }

  private view(vm: SimVm): SimVmView {
    const c = vm.config;
    // Tests find a clone in progress by the HCP id it will carry (Proxmox shows nothing of it yet).
    const description = c.description ?? vm.pendingConfig?.description;
    let sshKeys: string[] = [];
    if (c.sshkeys) {
      try {
        sshKeys = decodeURIComponent(c.sshkeys)
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l !== '');
      } catch {
        sshKeys = [c.sshkeys];
      }
    }
    return {
      vmid: vm.vmid,
      node: vm.node,
      name: c.name,
      template: c.template === '1',
      status: vm.running ? 'running' : 'stopped',
      qmpstatus: this.qmpstatus(vm),
      ...(c.lock ? { lock: c.lock } : {}),
      tags: (c.tags ?? '').split(/[;,\s]+/).filter((t) => t !== ''),
      ...(c.description !== undefined ? { description: c.description } : {}),
      ...(description && /^hcp-id: (.+)$/m.test(description)
        ? { hcp_id: /^hcp-id: (.+)$/m.exec(description)![1].trim() }
        : {}),
      ssh_keys: sshKeys,
      disks: this.disks(vm).byKey,
      ...(vm.pool ? { pool: vm.pool } : {}),
      config: { ...c },
    };
  }

  // -------------------------------------------------------------------------------------------------
  // Admin routes (for `npm run sim:proxmox` and manual poking)

  private async handleAdmin(req: IncomingMessage, res: ServerResponse, url: URL, method: string): Promise<void> {
    const reply = (status: number, payload: unknown) => {
      const body = JSON.stringify(payload, null, 2);
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    };
    if (this.options.adminKey && req.headers['x-sim-admin-key'] !== this.options.adminKey)
      return reply(401, { error: 'X-Sim-Admin-Key required' });
    let body: Record<string, unknown> = {};
    try {
      const raw = await readBody(req);
      if (raw.length > 0) body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    } catch {
      return reply(400, { error: 'body must be JSON' });
    }
    const route = `${method} ${url.pathname}`;
    switch (route) {
      case 'GET /_sim/state':
        return reply(200, {
          vms: this.listVms(),
          tasks: this.listTasks().slice(-100),
          validation_failures: this.validationFailures,
          stats: this.stats,
        });
      case 'GET /_sim/vms':
        return reply(200, this.listVms());
      case 'GET /_sim/requests':
        return reply(200, this.requests.slice(-500));
      case 'POST /_sim/tokens': {
        const token = this.createToken(
          String(body.userid ?? 'hcp@pve'),
          String(body.tokenid ?? `t${randomBytes(3).toString('hex')}`),
        );
        return reply(201, { token_id: token.tokenId, secret: token.secret, header: token.header });
      }
      case 'POST /_sim/faults': {
        const path =
          typeof body.path === 'string'
            ? body.path
            : typeof body.path_regex === 'string'
              ? new RegExp(body.path_regex)
              : undefined;
        const rule = { ...body, ...(path !== undefined ? { path } : {}) } as SimFaultRule;
        if (!['error', 'delay', 'drop', 'drop-after', 'task-fail', 'steal-vmid'].includes(String(rule.kind)))
          return reply(400, { error: 'kind must be error|delay|drop|drop-after|task-fail|steal-vmid' });
        return reply(201, { id: this.addFault(rule) });
      }
      case 'DELETE /_sim/faults':
        this.clearFaults();
        return reply(200, { cleared: true });
      case 'POST /_sim/tickets/revoke':
        this.revokeTickets();
        return reply(200, { revoked: true });
      default:
        return reply(404, { error: `no admin route ${route}` });
    }
  }
}

/** Eight printable characters ('!' .. '~'), as Proxmox generates VNC passwords. */
function vncPassword(): string {
  return [...randomBytes(8)].map((b) => String.fromCharCode(0x21 + (b % 94))).join('');
}

const SSH_KEY_TYPES = new Set([
  'ssh-rsa',
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
]);

/**
 * What ssh-keygen refuses in Proxmox's cloud-init key check: an unknown type, a blob that is not
 * base64, or a blob whose embedded type is not the declared one. Written apart from HCP's parser so
 * that the two can disagree, as HCP and Proxmox could. No ssh-dss: PVE 9's OpenSSH 10 dropped DSA.
 */
function checkSshKeys(encoded: string): void {
  let text: string;
  try {
    text = decodeURIComponent(encoded);
  } catch {
    throw new PveError(500, 'SSH public key validation error');
  }
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    const [type, b64] = line.split(/\s+/);
    const blob =
      b64 && /^[A-Za-z0-9+/]+={0,2}$/.test(b64) && b64.length % 4 === 0 ? Buffer.from(b64, 'base64') : undefined;
    const length = blob && blob.length >= 4 ? blob.readUInt32BE(0) : -1;
    const embedded =
      blob && length > 0 && 4 + length <= blob.length ? blob.subarray(4, 4 + length).toString('latin1') : '';
    if (!SSH_KEY_TYPES.has(type) || embedded !== type || blob!.length <= 4 + length) {
      throw new PveError(500, 'SSH public key validation error');
    }
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // pve-http-server refuses bodies over 512 KiB.
      if (size > 512 * 1024) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
