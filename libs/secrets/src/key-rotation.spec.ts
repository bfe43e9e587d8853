import { SecretsError } from './errors';
import { KeyRotation, keyUsage, referencedKeyIds, RotationRow, scanReferencedKeyIds } from './key-rotation';
import { Keyring } from './keyring';
import { LocalKeyWrapper } from './local-key-wrapper';
import { SealedSecret } from './sealed-secret';
import { SecretBox } from './secret-box';
import { failure, kek, MARKER } from './spec-support.spec';

const aadOf = (id: string) => `provider:${id}`;
const secretOf = (id: string) => ({ username: `user-${id}`, password: `${MARKER}-${id}` });

/** An in-memory stand-in for the providers table: id -> sealed jsonb. */
class Store {
  readonly rows = new Map<string, SealedSecret>();
  async *scan(batchSize = 3): AsyncGenerator<RotationRow> {
    const ids = [...this.rows.keys()];
    for (let i = 0; i < ids.length; i += batchSize) {
      await new Promise((r) => setImmediate(r)); // one "page" per tick, as a paged SELECT would
      for (const id of ids.slice(i, i + batchSize)) yield { id, sealed: this.rows.get(id) };
    }
  }
  /** Compare-and-set, as an UPDATE ... WHERE sealed = $previous would do. */
  save = async (id: string, sealed: SealedSecret, previous: SealedSecret): Promise<boolean> => {
    await new Promise((r) => setImmediate(r));
    if (JSON.stringify(this.rows.get(id)) !== JSON.stringify(previous)) return false;
    this.rows.set(id, sealed);
    return true;
  };
}

describe('rewrap', () => {
  it('moves the data key to the new active KEK, leaves the ciphertext alone, and then opens with only the new KEK', async () => {
    const k1 = kek();
    const k2 = kek();
    const keyring = Keyring.fromEnvValue(`k1:${k1.b64}`, undefined);
    const box = new SecretBox(new LocalKeyWrapper(keyring), { now: () => new Date('2031-01-01T00:00:00.000Z') });
    const sealed = await box.seal(secretOf('a'), aadOf('a'));

    keyring.add('k2', Buffer.from(k2.b64, 'base64'));
    keyring.activate('k2');
    expect(box.isCurrent(sealed)).toBe(false);
    const rewrapped = await box.rewrap(sealed);
    expect(rewrapped.key.keyId).toBe('k2');
    expect(box.isCurrent(rewrapped)).toBe(true);
    expect({
      nonce: rewrapped.nonce,
      ciphertext: rewrapped.ciphertext,
      tag: rewrapped.tag,
      createdAt: rewrapped.createdAt,
    }).toEqual({
      nonce: sealed.nonce,
      ciphertext: sealed.ciphertext,
      tag: sealed.tag,
      createdAt: sealed.createdAt,
    });
    expect(rewrapped.rewrappedAt).toBe('2031-01-01T00:00:00.000Z');

    const onlyK2 = new SecretBox(new LocalKeyWrapper(Keyring.fromEnvValue(`k2:${k2.b64}`, undefined)));
    expect(await onlyK2.openJson(rewrapped, aadOf('a'))).toEqual(secretOf('a'));
    const error = await failure(() => onlyK2.open(sealed, aadOf('a')));
    expect((error as SecretsError).code).toBe('UNKNOWN_KEY');
    expect(error.message).toMatch(/key-encryption key "k1", which is not in the keyring \(known ids: k2\)/);
  });
});

describe('KeyRotation.rotateAll', () => {
  it('rewraps every row in batches, with counts, skipping current rows and reporting bad ones without their content', async () => {
    const keyring = Keyring.fromEnvValue(`k1:${kek().b64}`, undefined);
    const box = new SecretBox(new LocalKeyWrapper(keyring));
    const store = new Store();
    for (const id of ['r1', 'r2', 'r3', 'r4', 'r5']) store.rows.set(id, await box.seal(secretOf(id), aadOf(id)));
    keyring.add('k2', kek().raw);
    keyring.activate('k2');
    for (const id of ['r6', 'r7']) store.rows.set(id, await box.seal(secretOf(id), aadOf(id)));
    store.rows.set('r8', { v: 1, password: MARKER } as unknown as SealedSecret);
    expect(referencedKeyIds([...store.rows.values()].filter((s) => s.alg))).toEqual(['k1', 'k2']);

    const save = async (id: string, sealed: SealedSecret, previous: SealedSecret) => {
      if (id === 'r5') {
        // The credential was replaced while the rotation ran: the conditional write declines.
        store.rows.set('r5', await box.seal(secretOf('r5-new'), aadOf('r5')));
      }
      return store.save(id, sealed, previous);
    };
    const result = await new KeyRotation(box).rotateAll(store.scan(), save, { concurrency: 2 });
    expect(result).toEqual({
      scanned: 8,
      rewrapped: 4,
      alreadyCurrent: 2,
      skipped: 1,
      failed: [{ id: 'r8', code: 'INVALID_ENVELOPE', message: expect.stringMatching(/sealed secret/) }],
    });
    expect(JSON.stringify(result)).not.toContain(MARKER);

    store.rows.delete('r8');
    expect(await scanReferencedKeyIds(store.scan())).toEqual(['k2']);
    expect(keyUsage(store.rows.values())).toEqual([{ wrapper: 'local', keyId: 'k2', count: 7 }]);
    keyring.remove('k1');
    for (const [id, sealed] of store.rows)
      expect(await box.openJson(sealed, aadOf(id))).toEqual(secretOf(id === 'r5' ? 'r5-new' : id));
  });

  it('a second run finds nothing to do', async () => {
    const keyring = Keyring.fromEnvValue(`k1:${kek().b64}`, undefined);
    const box = new SecretBox(new LocalKeyWrapper(keyring));
    const store = new Store();
    for (const id of ['a', 'b', 'c']) store.rows.set(id, await box.seal(secretOf(id), aadOf(id)));
    keyring.add('k2', kek().raw);
    keyring.activate('k2');
    const rotation = new KeyRotation(box);
    expect(await rotation.rotateAll(store.scan(), store.save)).toMatchObject({
      scanned: 3,
      rewrapped: 3,
      alreadyCurrent: 0,
    });
    expect(await rotation.rotateAll(store.scan(), store.save)).toMatchObject({
      scanned: 3,
      rewrapped: 0,
      alreadyCurrent: 3,
      failed: [],
    });
  });

  it('keeps at most `concurrency` rows in flight and does not leak what a failing save threw', async () => {
    const keyring = Keyring.fromEnvValue(`k1:${kek().b64}`, undefined);
    const box = new SecretBox(new LocalKeyWrapper(keyring));
    const store = new Store();
    for (let i = 0; i < 20; i++) store.rows.set(`r${i}`, await box.seal(secretOf(`${i}`), aadOf(`${i}`)));
    keyring.add('k2', kek().raw);
    keyring.activate('k2');
    let inFlight = 0;
    let maxInFlight = 0;
    const save = async (id: string, sealed: SealedSecret, previous: SealedSecret) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 2));
      inFlight--;
      if (id === 'r7') throw new Error(`database said: value ${MARKER} violates something`);
      return store.save(id, sealed, previous);
    };
    const result = await new KeyRotation(box).rotateAll(store.scan(5), save, { concurrency: 3 });
    expect(maxInFlight).toBeLessThanOrEqual(3);
    expect(maxInFlight).toBeGreaterThan(1);
    expect(result).toMatchObject({
      scanned: 20,
      rewrapped: 19,
      failed: [{ id: 'r7', code: 'ERROR', message: 'saving or re-wrapping failed' }],
    });
    expect(JSON.stringify(result)).not.toContain(MARKER);
  });

  it('stops reading the source after a failure when asked to', async () => {
    const keyring = Keyring.fromEnvValue(`k1:${kek().b64}`, undefined);
    const box = new SecretBox(new LocalKeyWrapper(keyring));
    const store = new Store();
    store.rows.set('bad', { v: 9 } as unknown as SealedSecret);
    for (let i = 0; i < 10; i++) store.rows.set(`r${i}`, await box.seal(secretOf(`${i}`), aadOf(`${i}`)));
    keyring.add('k2', kek().raw);
    keyring.activate('k2');
    const result = await new KeyRotation(box).rotateAll(store.scan(1), store.save, {
      concurrency: 1,
      stopOnError: true,
    });
    expect(result.failed).toEqual([
      { id: 'bad', code: 'UNSUPPORTED_VERSION', message: expect.stringContaining('format version 9') },
    ]);
    expect(result.scanned).toBe(1);
  });

  it('lets rows in flight finish when the source fails, then surfaces the source error', async () => {
    const keyring = Keyring.fromEnvValue(`k1:${kek().b64}`, undefined);
    const box = new SecretBox(new LocalKeyWrapper(keyring));
    const sealed = await box.seal(secretOf('a'), aadOf('a'));
    keyring.add('k2', kek().raw);
    keyring.activate('k2');
    const saved: string[] = [];
    async function* failingSource(): AsyncGenerator<RotationRow> {
      yield { id: 'a', sealed };
      yield { id: 'b', sealed };
      throw new Error('connection lost');
    }
    const save = async (id: string) => {
      await new Promise((r) => setTimeout(r, 5));
      saved.push(id);
    };
    await expect(new KeyRotation(box).rotateAll(failingSource(), save, { concurrency: 4 })).rejects.toThrow(
      'connection lost',
    );
    expect(saved.sort()).toEqual(['a', 'b']);
  });

  it('lets readers and writers keep working while the rotation runs', async () => {
    const k1 = kek();
    const k2 = kek();
    const keyring = Keyring.fromEnvValue(`k1:${k1.b64}`, undefined);
    const box = new SecretBox(new LocalKeyWrapper(keyring));
    const store = new Store();
    for (let i = 0; i < 150; i++) store.rows.set(`r${i}`, await box.seal(secretOf(`${i}`), aadOf(`r${i}`)));

    // Steps 1 and 2 of the procedure: add the new KEK, then make it active.
    keyring.add('k2', Buffer.from(k2.b64, 'base64'));
    keyring.activate('k2');

    let rotationDone = false;
    let reads = 0;
    let writes = 0;
    const reader = async (seed: number) => {
      let i = seed;
      while (!rotationDone) {
        const id = `r${i % 150}`;
        const secret = await box.openJson(store.rows.get(id), aadOf(id));
        expect(secret).toEqual(secretOf(`${i % 150}`));
        reads++;
        i += 7;
        await new Promise((r) => setImmediate(r));
      }
    };
    const writer = async () => {
      while (!rotationDone) {
        const id = `w${writes}`;
        store.rows.set(id, await box.seal(secretOf(id), aadOf(id)));
        writes++;
        await new Promise((r) => setImmediate(r));
      }
    };
    const rotation = new KeyRotation(box).rotateAll(store.scan(10), store.save, { concurrency: 4 }).finally(() => {
      rotationDone = true;
    });
    const [result] = await Promise.all([rotation, reader(0), reader(3), reader(5), writer()]);
    expect(reads).toBeGreaterThan(50);
    expect(result.failed).toEqual([]);
    expect(result.rewrapped).toBe(150);

    // Step 4: nothing references k1 any more, so it goes; every row still opens.
    expect(referencedKeyIds(store.rows.values())).toEqual(['k2']);
    const onlyK2 = new SecretBox(new LocalKeyWrapper(Keyring.fromEnvValue(`k2:${k2.b64}`, undefined)));
    for (const [id, sealed] of store.rows)
      expect(await onlyK2.openJson(sealed, aadOf(id))).toEqual(secretOf(id.startsWith('w') ? id : id.slice(1)));
  });

  it('shows why every process needs the new KEK before any process activates it', async () => {
    const k1 = kek();
    const k2 = kek();
    const processA = Keyring.fromEnvValue(`k1:${k1.b64}`, undefined);
    const processB = Keyring.fromEnvValue(`k1:${k1.b64}`, undefined);
    const boxA = new SecretBox(new LocalKeyWrapper(processA));
    const boxB = new SecretBox(new LocalKeyWrapper(processB));
    processA.add('k2', Buffer.from(k2.b64, 'base64'));
    processA.activate('k2');
    const sealedByA = await boxA.seal(secretOf('x'), aadOf('x'));
    expect((await failure(() => boxB.open(sealedByA, aadOf('x')))).message).toMatch(
      /"k2", which is not in the keyring/,
    );
    processB.add('k2', Buffer.from(k2.b64, 'base64')); // step 1 done on B as well
    expect(await boxB.openJson(sealedByA, aadOf('x'))).toEqual(secretOf('x'));
  });
});
