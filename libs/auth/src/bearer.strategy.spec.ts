import { BearerTokenStrategy, bearerTokenOf } from './bearer.strategy';
import { Principal } from './principal';
import { TokenVerifier } from './token-verifier';

describe('bearer tokens', () => {
  const principal = { sub: 'tom' } as Principal;
  const verifier = { verify: jest.fn(async () => principal) } as unknown as TokenVerifier;
  const strategy = new BearerTokenStrategy(verifier);

  it('are read from the Authorization header only', () => {
    expect(bearerTokenOf({ authorization: 'Bearer abc.def.ghi' })).toBe('abc.def.ghi');
    expect(bearerTokenOf({ authorization: 'bearer abc' })).toBe('abc');
    expect(bearerTokenOf({ authorization: 'Basic abc' })).toBeNull();
    expect(bearerTokenOf({})).toBeNull();
  });

  it('authenticate when they come in the Authorization header', async () => {
    await expect(strategy.validate({ headers: { authorization: 'Bearer t1' } }, 't1')).resolves.toBe(principal);
  });

  it('do not authenticate from ?access_token= or a body field, and are not even verified', async () => {
    (verifier.verify as jest.Mock).mockClear();
    await expect(strategy.validate({ headers: {} }, 't1')).resolves.toBeNull();
    expect(verifier.verify).not.toHaveBeenCalled();
  });
});
