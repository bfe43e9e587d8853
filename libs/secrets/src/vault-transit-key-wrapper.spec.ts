import { inspect } from 'node:util';
import { SecretsError } from './errors';
import { VaultTransitKeyWrapper } from './vault-transit-key-wrapper';

// The HTTP behaviour is tested against a fake transit server in test/integration/secrets; these are the
// checks that need no server.
describe('VaultTransitKeyWrapper options', () => {
  const base = { address: 'https://vault.internal:8200', token: 'hvs.TOKEN', keyName: 'hcp' };

  it.each<[string, Partial<typeof base> & Record<string, unknown>, RegExp]>([
    ['a non-URL address', { address: 'vault:8200:x' }, /not a URL|must start with https/],
    ['another protocol', { address: 'ftp://vault' }, /must start with https:\/\//],
    ['plain http off loopback', { address: 'http://vault.internal:8200' }, /plain http/],
    ['credentials in the address', { address: 'https://user:pw@vault:8200' }, /must not carry credentials/],
    ['a key name with a slash', { keyName: 'a/b' }, /key name "a\/b"/],
    ['a mount with ..', { mount: 'transit/../sys' }, /mount "transit\/..\/sys"/],
    ['a key name of ..', { keyName: '..' }, /key name "\.\."/],
    ['an empty token', { token: ' ' }, /Vault token is empty/],
  ])('refuses %s', (_what, override, message) => {
    let error: SecretsError | undefined;
    try {
      new VaultTransitKeyWrapper({ ...base, ...override } as never);
    } catch (e) {
      error = e as SecretsError;
    }
    expect(error?.code).toBe('CONFIG');
    expect(error?.message).toMatch(message);
    expect(error?.message).not.toContain('hvs.TOKEN');
    expect(error?.message).not.toContain(':pw@');
  });

  it('accepts http on loopback, or elsewhere when explicitly allowed', () => {
    expect(new VaultTransitKeyWrapper({ ...base, address: 'http://127.0.0.1:8200' }).keyId).toBe('transit/hcp');
    expect(new VaultTransitKeyWrapper({ ...base, address: 'http://[::1]:8200', mount: '/kv/transit/' }).keyId).toBe(
      'kv/transit/hcp',
    );
    expect(
      () => new VaultTransitKeyWrapper({ ...base, address: 'http://vault:8200', allowInsecureHttp: true }),
    ).not.toThrow();
  });

  it('refuses envelopes of another wrapper or another Vault key before any request', async () => {
    const calls: unknown[] = [];
    const wrapper = new VaultTransitKeyWrapper({
      ...base,
      fetch: (async (...args: unknown[]) => calls.push(args)) as never,
    });
    await expect(wrapper.unwrap({ wrapper: 'local', keyId: 'k1', ciphertext: 'x' })).rejects.toThrow(
      /wrapped by "local", not by Vault transit/,
    );
    await expect(
      wrapper.unwrap({ wrapper: 'vault-transit', keyId: 'transit/other', keyVersion: 1, ciphertext: 'vault:v1:AAAA' }),
    ).rejects.toThrow(/Vault transit key "transit\/other", but this wrapper is configured for "transit\/hcp"/);
    await expect(
      wrapper.rewrap({ wrapper: 'vault-transit', keyId: 'transit/hcp', ciphertext: 'not-vault' }),
    ).rejects.toThrow(/not a Vault transit ciphertext/);
    expect(calls).toHaveLength(0);
  });

  it('never shows the token when logged', () => {
    const wrapper = new VaultTransitKeyWrapper(base);
    expect(`${JSON.stringify(wrapper)} ${inspect(wrapper, { showHidden: true, depth: 5 })}`).not.toContain('hvs.TOKEN');
  });
});
