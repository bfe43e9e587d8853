import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { middlewareChain } from './middleware-chain';

const run = (chain: RequestHandler) =>
  new Promise<{ err: unknown; seen: string[] }>((resolve) => {
    const req = { seen: [] as string[] } as unknown as Request & { seen: string[] };
    chain(req, {} as Response, ((err?: unknown) => resolve({ err, seen: req.seen })) as NextFunction);
  });
const mark =
  (name: string): RequestHandler =>
  (req, _res, next) => {
    (req as unknown as { seen: string[] }).seen.push(name);
    next();
  };

describe('a middleware chain', () => {
  it('runs its middlewares in order, then goes on', async () => {
    expect(await run(middlewareChain(mark('a'), mark('b'), mark('c')))).toEqual({
      err: undefined,
      seen: ['a', 'b', 'c'],
    });
  });

  it('skips the rest on an error passed on, handing it over', async () => {
    const refused = new Error('refused');
    const result = await run(middlewareChain(mark('a'), (_q, _s, next) => next(refused), mark('c')));
    expect(result).toEqual({ err: refused, seen: ['a'] });
  });

  it('hands over an error thrown by a middleware', async () => {
    const thrown = new Error('thrown');
    const result = await run(
      middlewareChain(
        mark('a'),
        () => {
          throw thrown;
        },
        mark('c'),
      ),
    );
    expect(result).toEqual({ err: thrown, seen: ['a'] });
  });

  it('waits for a middleware that goes on later', async () => {
    const later: RequestHandler = (req, _res, next) => {
      setImmediate(() => mark('later')(req, _res, next));
    };
    expect(await run(middlewareChain(later, mark('b')))).toEqual({ err: undefined, seen: ['later', 'b'] });
  });
});
