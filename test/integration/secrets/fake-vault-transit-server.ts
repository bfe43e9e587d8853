/**
 * FAKE VAULT TRANSIT SERVER — this is not HashiCorp Vault. It is a small HTTP server written for HCP's
 * tests that answers the documented HTTP contract of Vault's transit secrets engine (API v1) that
 * `VaultTransitKeyWrapper` relies on, so the wrapper's requests, answers and error handling are exercised
 * over real HTTP on 127.0.0.1:
 *
 *   POST /v1/<mount>/encrypt/<name>   {plaintext: base64}            -> {data: {ciphertext: "vault:vN:...", key_version}}
 *   POST /v1/<mount>/decrypt/<name>   {ciphertext}                   -> {data: {plaintext: base64}}
 *   POST /v1/<mount>/rewrap/<name>    {ciphertext}                   -> {data: {ciphertext, key_version}} (latest version)
 *   POST /v1/<mount>/keys/<name>                                     create (aes256-gcm96)
 *   POST /v1/<mount>/keys/<name>/rotate                              new latest version
 *   POST /v1/<mount>/keys/<name>/config {min_decryption_version}     older versions stop decrypting
 *   GET  /v1/<mount>/keys/<name>                                     {data: {latest_version, min_decryption_version, keys}}
 *
 * Authentication is the `X-Vault-Token` header (403 `permission denied` otherwise); errors are
 * `{"errors": [...]}` with 400 for bad input, 404 for unknown paths and 503 while "sealed". Ciphertexts
 * are `vault:v<version>:` + base64(nonce 12 ‖ AES-256-GCM ciphertext ‖ tag 16), as Vault's aes256-gcm96
 * keys produce. Encrypting with a key that does not exist creates it (Vault's upsert). What it does not
 * model: policies beyond one token, derived/convergent keys, batch input, other key types, HA redirects
 * (simulated by `redirectTo`).
 */
import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

interface TransitKey {
  versions: Buffer[]; // index = version - 1
  minDecryptionVersion: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export class FakeVaultTransitServer {
  readonly requests: RecordedRequest[] = [];
  readonly keys = new Map<string, TransitKey>();
  /** Tokens accepted in X-Vault-Token. */
  readonly tokens = new Set<string>();
  /** Answer 503 "Vault is sealed" to everything. */
  sealed = false;
  /** Delay every answer (ms), for timeouts. */
  delayMs = 0;
  /** Answer 307 to this address, as a standby node without request forwarding would. */
  redirectTo: string | null = null;
  /** Replace the next answer's body (malformed-answer tests). */
  nextBody: string | null = null;
  private server: http.Server | null = null;

  constructor(
    token: string,
    readonly mount = 'transit',
  ) {
    this.tokens.add(token);
  }

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.server = null;
  }

  createKey(name: string): void {
    if (!this.keys.has(name)) this.keys.set(name, { versions: [randomBytes(32)], minDecryptionVersion: 1 });
  }

  rotateKey(name: string): number {
    const key = this.keys.get(name);
    if (!key) throw new Error(`fake: no key ${name}`);
    key.versions.push(randomBytes(32));
    return key.versions.length;
  }

  /** Requests whose path ends with `/<operation>/<name>`. */
  calls(operation: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path.split('/').slice(-2, -1)[0] === operation);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = (req.url ?? '/').split('?')[0];
    this.requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    if (res.destroyed) return;

    const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      const text = this.nextBody ?? JSON.stringify(payload);
      this.nextBody = null;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(text);
    };
    const fail = (status: number, ...errors: string[]) => send(status, { errors });
    const ok = (data: unknown) =>
      send(200, {
        request_id: randomUUID(),
        lease_id: '',
        renewable: false,
        lease_duration: 0,
        data,
        wrap_info: null,
        warnings: null,
        auth: null,
      });

    if (this.redirectTo) return send(307, { errors: [] }, { location: `${this.redirectTo}${path}` });
    if (this.sealed) return fail(503, 'Vault is sealed');
    const token = req.headers['x-vault-token'];
    if (typeof token !== 'string' || !this.tokens.has(token)) return fail(403, 'permission denied');

    const prefix = `/v1/${this.mount}/`;
    if (!path.startsWith(prefix)) return fail(404, `no handler for route "${path.slice(4)}". route entry not found.`);
    const parts = path.slice(prefix.length).split('/');
    let input: Record<string, unknown> = {};
    if (body) {
      try {
        input = JSON.parse(body);
      } catch {
        return fail(400, 'failed to parse JSON input: invalid character');
      }
    }

    const [op, name, sub] = parts;
    if (op === 'keys' && name) {
      if (req.method === 'GET' && !sub) {
        const key = this.keys.get(name);
        if (!key) return fail(404);
        const versions = Object.fromEntries(key.versions.map((_, i) => [String(i + 1), 1700000000 + i]));
        return ok({
          name,
          type: 'aes256-gcm96',
          latest_version: key.versions.length,
          min_decryption_version: key.minDecryptionVersion,
          keys: versions,
        });
      }
      if (req.method === 'POST' && !sub) {
        this.createKey(name);
        res.writeHead(204).end();
        return;
      }
      if (req.method === 'POST' && sub === 'rotate') {
        if (!this.keys.has(name)) return fail(400, 'key not found');
        this.rotateKey(name);
        return ok({ name, latest_version: this.keys.get(name)!.versions.length });
      }
      if (req.method === 'POST' && sub === 'config') {
        const key = this.keys.get(name);
        if (!key) return fail(400, 'key not found');
        const min = Number(input.min_decryption_version);
        if (!Number.isInteger(min) || min < 1 || min > key.versions.length)
          return fail(400, 'cannot set min decryption version above latest version');
        key.minDecryptionVersion = min;
        res.writeHead(204).end();
        return;
      }
    }
    if (req.method !== 'POST' || !name || sub !== undefined) return fail(405, 'unsupported operation');

    if (op === 'encrypt') {
      const plaintext = decodeB64(input.plaintext);
      if (!plaintext) return fail(400, 'failed to base64-decode plaintext');
      this.createKey(name); // upsert, as Vault does for a token allowed to create
      return ok(this.encrypt(this.keys.get(name)!, plaintext));
    }
    if (op === 'decrypt' || op === 'rewrap') {
      const key = this.keys.get(name);
      if (!key) return fail(400, 'encryption key not found');
      const result = this.decrypt(key, input.ciphertext);
      if (typeof result === 'string') return fail(400, result);
      if (op === 'decrypt') return ok({ plaintext: result.toString('base64') });
      const rewrapped = this.encrypt(key, result);
      result.fill(0);
      return ok(rewrapped);
    }
    return fail(404, `no handler for route "${path.slice(4)}". route entry not found.`);
  }

  private encrypt(key: TransitKey, plaintext: Buffer): { ciphertext: string; key_version: number } {
    const version = key.versions.length;
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key.versions[version - 1], nonce);
    const body = Buffer.concat([nonce, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return { ciphertext: `vault:v${version}:${body.toString('base64')}`, key_version: version };
  }

  /** The plaintext, or Vault's error string. */
  private decrypt(key: TransitKey, ciphertext: unknown): Buffer | string {
    if (typeof ciphertext !== 'string' || !ciphertext.startsWith('vault:')) return 'invalid ciphertext: no prefix';
    const match = /^vault:v(\d+):(.*)$/.exec(ciphertext);
    if (!match) return 'invalid ciphertext: wrong number of fields';
    const version = Number(match[1]);
    if (version < key.minDecryptionVersion) return 'ciphertext or signature version is disallowed by policy (too old)';
    if (version > key.versions.length) return 'invalid key version';
    const body = decodeB64(match[2]);
    if (!body || body.length < 28) return 'invalid ciphertext: could not decode';
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.versions[version - 1], body.subarray(0, 12));
      decipher.setAuthTag(body.subarray(body.length - 16));
      return Buffer.concat([decipher.update(body.subarray(12, body.length - 16)), decipher.final()]);
    } catch {
      return 'cipher: message authentication failed';
    }
  }
}

function decodeB64(value: unknown): Buffer | null {
  if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) return null;
  return Buffer.from(value, 'base64');
}
