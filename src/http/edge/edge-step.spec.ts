import type { FastifyReply, FastifyRequest } from 'fastify';
import { HcpError } from '@hcp/domain';
import { EdgeStep, edgeHook } from './edge-step';

const run = (hook: ReturnType<typeof edgeHook>) => {
  const req = { seen: [] as string[] } as unknown as FastifyRequest & { seen: string[] };
  let passed: unknown = 'not called';
  hook(req, {} as FastifyReply, (err) => {
    passed = err;
  });
  return { err: passed, seen: req.seen };
};
const mark =
  (name: string): EdgeStep =>
  (req) => {
    (req as unknown as { seen: string[] }).seen.push(name);
    return undefined;
  };

describe('the edge hook', () => {
  it('runs its steps in order, then lets the request on', () => {
    expect(run(edgeHook(mark('a'), mark('b'), mark('c')))).toEqual({ err: undefined, seen: ['a', 'b', 'c'] });
  });

  it('ends the request with the first refusal, running no later step', () => {
    const refused = new HcpError('NOT_FOUND', 'no such route');
    expect(run(edgeHook(mark('a'), () => refused, mark('c')))).toEqual({ err: refused, seen: ['a'] });
  });

  it('turns a step that throws into that refusal', () => {
    const thrown = new HcpError('INVALID_REQUEST', 'bad');
    const result = run(
      edgeHook(() => {
        throw thrown;
      }, mark('b')),
    );
    expect(result).toEqual({ err: thrown, seen: [] });
  });
});
