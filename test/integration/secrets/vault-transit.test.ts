import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  KeyRotation,
  Keyring,
  LocalKeyWrapper,
  loadSecretsFromEnv,
  referencedKeyIds,
  SealedSecret,
  SecretBox,
  SecretsError,
  VaultTransitKeyWrapper,
} from '@hcp/secrets';
import { FakeVaultTransitServer } from './fake-vault-transit-server';

// VaultTransitKeyWrapper against FakeVaultTransitServer: a stand-in written for these tests that follows
// Vault's documented transit HTTP contract on 127.0.0.1 (see the header of fake-vault-transit-server.ts).
// It is not Vault; a run against a real Vault dev server would use the same wrapper unchanged.

const TOKEN = 'hvs.FAKE-TOKEN-do-not-leak-41c7';
const MARKER = 'MARKER-vault-secret-93be';
const KEY = 'hcp-provider-credentials';
const aadOf = (id: string) => `provider:${id}`;
const secretOf = (id: string) => ({ username: `svc-${id}`, password: `${MARKER}-${id}` });

let vault: FakeVaultTransitServer;
let address: string;

beforeEach(async () => {
  vault = new FakeVaultTransitServer(TOKEN);
  address = await vault.start();
  vault.createKey(KEY);
});

afterEach(async () => {
  await vault.stop();
});

function wrapperWith(
  overrides: Partial<ConstructorParameters<typeof VaultTransitKeyWrapper>[0]> = {},
): VaultTransitKeyWrapper {
  return new VaultTransitKeyWrapper({ address, token: TOKEN, keyName: KEY, timeoutMs: 2000, ...overrides });
}

async function rejection(promise: Promise<unknown>): Promise<SecretsError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SecretsError);
    return error as SecretsError;
  }
  throw new Error('expected a failure');
}

/** The data keys that went to Vault: none of them may appear in an error. */
function dataKeysSeen(): string[] {
  return vault.calls('encrypt').map((r) => JSON.parse(r.body).plaintext as string);
}

function expectClean(error: Error): void {
  const text = `${error.message}\n${error.stack}\n${JSON.stringify(error)}`;
  for (const secret of [TOKEN, MARKER, ...dataKeysSeen()]) expect(text).not.toContain(secret);
}

describe('VaultTransitKeyWrapper against a fake transit server', () => {
  it('seals and opens through encrypt/decrypt, sending only the data key, with the token header', async () => {
    const box = new SecretBox(wrapperWith({ namespace: 'team-a' }));
    const sealed = await box.seal(secretOf('p1'), aadOf('p1'));
    expect(sealed.wrapper).toBe('vault-transit');
    expect(sealed.key).toMatchObject({ wrapper: 'vault-transit', keyId: `transit/${KEY}`, keyVersion: 1 });
    expect(sealed.key.ciphertext).toMatch(/^vault:v1:/);
    expect(await box.openJson(sealed, aadOf('p1'))).toEqual(secretOf('p1'));

    const [encrypt] = vault.calls('encrypt');
    expect(encrypt.path).toBe(`/v1/transit/encrypt/${KEY}`);
    expect(encrypt.headers['x-vault-token']).toBe(TOKEN);
    expect(encrypt.headers['x-vault-namespace']).toBe('team-a');
    expect(Buffer.from(JSON.parse(encrypt.body).plaintext, 'base64')).toHaveLength(32);
    expect(vault.calls('decrypt')).toHaveLength(1);
    // The credential itself never goes to Vault, only its data key.
    for (const request of vault.requests) expect(request.body).not.toContain(MARKER);
    expect(JSON.stringify(sealed)).not.toContain(dataKeysSeen()[0]);
  });

  it('rotates with the rewrap endpoint (the data key never leaves Vault) while readers keep opening', async () => {
    const box = new SecretBox(wrapperWith());
    const store = new Map<string, SealedSecret>();
    for (let i = 0; i < 40; i++) store.set(`p${i}`, await box.seal(secretOf(`p${i}`), aadOf(`p${i}`)));
    const v1Copy = store.get('p0')!;

    // Rotate the KEK inside Vault over its HTTP API, as an operator would.
    const rotate = await fetch(`${address}/v1/transit/keys/${KEY}/rotate`, {
      method: 'POST',
      headers: { 'x-vault-token': TOKEN },
    });
    expect(rotate.status).toBe(200);
    const decryptsBefore = vault.calls('decrypt').length;

    let done = false;
    let reads = 0;
    const reader = async (offset: number) => {
      for (let i = offset; !done; i += 3) {
        const id = `p${i % 40}`;
        expect(await box.openJson(store.get(id), aadOf(id))).toEqual(secretOf(id));
        reads++;
      }
    };
    const rows = (async function* () {
      for (const [id, sealed] of [...store]) yield { id, sealed };
    })();
    const rotation = new KeyRotation(box)
      .rotateAll(
        rows,
        async (id, sealed) => {
          store.set(id, sealed);
        },
        { concurrency: 4 },
      )
      .finally(() => {
        done = true;
      });
    const [result] = await Promise.all([rotation, reader(0), reader(1)]);
    expect(result).toEqual({ scanned: 40, rewrapped: 40, alreadyCurrent: 0, skipped: 0, failed: [] });
    expect(reads).toBeGreaterThan(0);
    expect(vault.calls('rewrap')).toHaveLength(40);
    expect(vault.calls('decrypt').length - decryptsBefore).toBe(reads); // decrypts were the readers', none the rotation's
    expect([...store.values()].every((s) => s.key.keyVersion === 2 && s.key.ciphertext.startsWith('vault:v2:'))).toBe(
      true,
    );

    // Version 1 may now be retired in Vault: new envelopes open, an old copy is refused with Vault's reason.
    await fetch(`${address}/v1/transit/keys/${KEY}/config`, {
      method: 'POST',
      headers: { 'x-vault-token': TOKEN },
      body: JSON.stringify({ min_decryption_version: 2 }),
    });
    expect(await box.openJson(store.get('p0'), aadOf('p0'))).toEqual(secretOf('p0'));
    const old = await rejection(box.open(v1Copy, aadOf('p0')));
    expect(old.code).toBe('WRAPPER_REJECTED');
    expect(old.message).toMatch(
      /Vault transit decrypt with key transit\/hcp-provider-credentials: Vault answered 400 \(.*disallowed by policy/,
    );
    expectClean(old);

    // A second run re-wraps under the same version: nothing to store.
    const again = await new KeyRotation(box).rotateAll(
      [...store].map(([id, sealed]) => ({ id, sealed })),
      async () => {
        throw new Error('nothing should be saved');
      },
    );
    expect(again).toMatchObject({ scanned: 40, rewrapped: 0, alreadyCurrent: 40, failed: [] });
  });

  it('moves envelopes from the local keyring to Vault with the local wrapper kept as a reader', async () => {
    const local = new LocalKeyWrapper(
      Keyring.fromEnvValue(`k1:${Keyring.generateKey().toString('base64')}`, undefined),
    );
    const localBox = new SecretBox(local);
    const store = new Map<string, SealedSecret>();
    for (const id of ['a', 'b', 'c']) store.set(id, await localBox.seal(secretOf(id), aadOf(id)));

    const vaultWrapper = wrapperWith();
    const moving = new SecretBox(vaultWrapper, { readers: [local] });
    expect(await moving.openJson(store.get('a'), aadOf('a'))).toEqual(secretOf('a'));
    const result = await new KeyRotation(moving).rotateAll(
      [...store].map(([id, sealed]) => ({ id, sealed })),
      async (id, sealed) => {
        store.set(id, sealed);
      },
    );
    expect(result).toMatchObject({ scanned: 3, rewrapped: 3, failed: [] });
    expect(referencedKeyIds(store.values())).toEqual([`transit/${KEY}`]);
    const vaultOnly = new SecretBox(vaultWrapper);
    for (const [id, sealed] of store) expect(await vaultOnly.openJson(sealed, aadOf(id))).toEqual(secretOf(id));
  });

  it('is built from the environment (HCP_SECRETS_WRAPPER=vault-transit)', async () => {
    const { box, summary } = loadSecretsFromEnv({
      HCP_SECRETS_WRAPPER: 'vault-transit',
      HCP_SECRETS_VAULT_ADDR: address,
      HCP_SECRETS_VAULT_TOKEN: TOKEN,
      HCP_SECRETS_VAULT_TRANSIT_KEY: KEY,
    });
    expect(summary).not.toContain(TOKEN);
    const sealed = await box.seal(secretOf('env'), aadOf('env'));
    expect(await box.openJson(sealed, aadOf('env'))).toEqual(secretOf('env'));
  });

  it('asks the token source on every call, so a renewed token is picked up', async () => {
    let current = TOKEN;
    const box = new SecretBox(wrapperWith({ token: () => current }));
    const sealed = await box.seal(secretOf('t'), aadOf('t'));
    vault.tokens.clear();
    vault.tokens.add('hvs.RENEWED');
    current = 'hvs.RENEWED';
    expect(await box.openJson(sealed, aadOf('t'))).toEqual(secretOf('t'));
    expect(vault.requests.at(-1)?.headers['x-vault-token']).toBe('hvs.RENEWED');
  });

  describe('failures are typed, readable, and never carry the token, the data key or the secret', () => {
    it('a refused token is WRAPPER_DENIED', async () => {
      const box = new SecretBox(wrapperWith({ token: 'hvs.WRONG-TOKEN' }));
      const error = await rejection(box.seal(secretOf('x'), aadOf('x')));
      expect(error.code).toBe('WRAPPER_DENIED');
      expect(error.retryable).toBe(false);
      expect(error.message).toBe(
        `Vault transit encrypt with key transit/${KEY}: Vault answered 403 (permission denied)`,
      );
      expect(error.message).not.toContain('hvs.WRONG-TOKEN');
      expectClean(error);
    });

    it('a sealed Vault is WRAPPER_UNAVAILABLE and retryable', async () => {
      const box = new SecretBox(wrapperWith());
      const sealed = await box.seal(secretOf('x'), aadOf('x'));
      vault.sealed = true;
      const error = await rejection(box.open(sealed, aadOf('x')));
      expect(error.code).toBe('WRAPPER_UNAVAILABLE');
      expect(error.retryable).toBe(true);
      expect(error.message).toMatch(/Vault answered 503 \(Vault is sealed\)/);
      expectClean(error);
    });

    it('a Vault that is down or slow is WRAPPER_UNAVAILABLE', async () => {
      const box = new SecretBox(wrapperWith({ timeoutMs: 200 }));
      const sealed = await box.seal(secretOf('x'), aadOf('x'));
      vault.delayMs = 1000;
      const slow = await rejection(box.open(sealed, aadOf('x')));
      expect(slow.code).toBe('WRAPPER_UNAVAILABLE');
      expect(slow.message).toMatch(/did not answer within 200 ms/);
      expectClean(slow);
      vault.delayMs = 0;
      // Nothing listens on a port that was just released.
      const probe = http.createServer();
      await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
      const closedPort = (probe.address() as AddressInfo).port;
      await new Promise<void>((r) => probe.close(() => r()));
      const down = await rejection(
        new SecretBox(wrapperWith({ address: `http://127.0.0.1:${closedPort}` })).open(sealed, aadOf('x')),
      );
      expect(down.code).toBe('WRAPPER_UNAVAILABLE');
      expect(down.message).toBe(
        `Vault transit decrypt with key transit/${KEY}: http://127.0.0.1:${closedPort} is unreachable (ECONNREFUSED)`,
      );
      expectClean(down);
    });

    it('a tampered wrapped key is AUTHENTICATION_FAILED; a tampered secret too', async () => {
      const box = new SecretBox(wrapperWith());
      const sealed = await box.seal(secretOf('x'), aadOf('x'));
      const body = Buffer.from(sealed.key.ciphertext.slice('vault:v1:'.length), 'base64');
      body[20] ^= 1;
      const tamperedKey = { ...sealed, key: { ...sealed.key, ciphertext: `vault:v1:${body.toString('base64')}` } };
      const keyError = await rejection(box.open(tamperedKey, aadOf('x')));
      expect(keyError.code).toBe('AUTHENTICATION_FAILED');
      expect(keyError.message).toMatch(/Vault answered 400 \(cipher: message authentication failed\)/);
      expectClean(keyError);
      const aadError = await rejection(box.open(sealed, aadOf('other')));
      expect(aadError.code).toBe('AUTHENTICATION_FAILED');
      expectClean(aadError);
    });

    it('a redirect is refused rather than followed with the token', async () => {
      const elsewhere = http.createServer((_req, res) => res.writeHead(500).end());
      await new Promise<void>((r) => elsewhere.listen(0, '127.0.0.1', r));
      let hits = 0;
      elsewhere.on('request', () => hits++);
      vault.redirectTo = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
      const error = await rejection(new SecretBox(wrapperWith()).seal(secretOf('x'), aadOf('x')));
      expect(error.code).toBe('WRAPPER_REJECTED');
      expect(error.message).toMatch(/answered a redirect \(307\)/);
      expect(hits).toBe(0);
      expectClean(error);
      await new Promise<void>((r) => elsewhere.close(() => r()));
    });

    it('an answer outside the contract is WRAPPER_REJECTED', async () => {
      const box = new SecretBox(wrapperWith());
      vault.nextBody = '{"data":{"ciphertext":"not-a-vault-ciphertext"}}';
      expect((await rejection(box.seal(secretOf('x'), aadOf('x')))).message).toMatch(
        /encrypt answered without a vault:vN: ciphertext/,
      );
      vault.nextBody = 'not json';
      expect((await rejection(box.seal(secretOf('x'), aadOf('x')))).message).toMatch(
        /Vault answered 200 without a "data" object/,
      );
      const sealed = await box.seal(secretOf('x'), aadOf('x'));
      vault.nextBody = '{"data":{"plaintext":"%%%"}}';
      const bad = await rejection(box.open(sealed, aadOf('x')));
      expect(bad.code).toBe('WRAPPER_REJECTED');
      expect(bad.message).toMatch(/Vault transit decrypt answer is not valid base64/);
      vault.nextBody = `{"data":{"plaintext":"${Buffer.alloc(16).toString('base64')}"}}`;
      expect((await rejection(box.open(sealed, aadOf('x')))).message).toMatch(
        /unwrapped data key is 16 bytes, expected 32/,
      );
    });

    it("a missing transit key is WRAPPER_REJECTED with Vault's reason", async () => {
      const box = new SecretBox(wrapperWith());
      const sealed = await box.seal(secretOf('x'), aadOf('x'));
      vault.keys.delete(KEY);
      const error = await rejection(box.open(sealed, aadOf('x')));
      expect(error.code).toBe('WRAPPER_REJECTED');
      expect(error.message).toMatch(/Vault answered 400 \(encryption key not found\)/);
    });
  });
});
