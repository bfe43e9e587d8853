import { BearerAuthenticator, bearerTokenOf } from './bearer-authenticator';
import { Principal } from './principal';
import { TokenVerifier } from './token-verifier';

describe('bearer tokens', () => {
  const principal = { sub: 'tom' } as Principal;
  const verifier = { verify: jest.fn(async () => principal) } as unknown as TokenVerifier;
  const authenticator = new BearerAuthenticator(verifier);

  it('are read from the Authorization header only', () => {
    expect(bearerTokenOf({ authorization: 'Bearer abc.def.ghi' })).toBe('abc.def.ghi');
    expect(bearerTokenOf({ authorization: 'bearer abc' })).toBe('abc');
    expect(bearerTokenOf({ authorization: 'Basic abc' })).toBeNull();
    expect(bearerTokenOf({ authorization: 'Bearer  abc' })).toBeNull();
    expect(bearerTokenOf({})).toBeNull();
  });

  it('authenticate when they come in the Authorization header', async () => {
    await expect(authenticator.authenticate({ headers: { authorization: 'Bearer t1' } })).resolves.toBe(principal);
  });

  it('do not authenticate from ?access_token= or a body field, and are not even verified', async () => {
    (verifier.verify as jest.Mock).mockClear();
    await expect(authenticator.authenticate({ headers: {}, query: { access_token: 't1' } })).resolves.toBeNull();
    await expect(authenticator.authenticate({ headers: {}, body: { access_token: 't1' } })).resolves.toBeNull();
    expect(verifier.verify).not.toHaveBeenCalled();
  });

  it('do not authenticate a request that also carries one in its query or body', async () => {
    (verifier.verify as jest.Mock).mockClear();
    const headers = { authorization: 'Bearer t1' };
    await expect(authenticator.authenticate({ headers, query: { access_token: 't2' } })).resolves.toBeNull();
    await expect(authenticator.authenticate({ headers, body: { access_token: 't1' } })).resolves.toBeNull();
    expect(verifier.verify).not.toHaveBeenCalled();
  });
});
