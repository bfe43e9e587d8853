import { Writable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Store, storage } from 'nestjs-pino/storage';
import { requestLoggerOptions } from './logger-options';
import { requestLogging } from './request-logging';

function logged(level: 'warn' | 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { lines, middleware: requestLogging({ ...requestLoggerOptions(level), stream }) };
}

/** A request as Fastify presents it to a hook: its own object, and Node's message under `raw`. */
const request = () => {
  const raw = {
    method: 'GET',
    url: '/v1/projects/p1/vms?token=secret',
    headers: { authorization: 'Bearer secret' },
    socket: {},
  };
  return {
    traceId: 'trace-7',
    method: raw.method,
    url: raw.url,
    headers: raw.headers,
    params: { project_id: 'p1' },
    user: { sub: 'lena' },
    raw,
  } as unknown as FastifyRequest;
};

const response = () => ({ raw: { on: () => undefined, removeListener: () => undefined } }) as unknown as FastifyReply;

describe('request logging', () => {
  it('writes a line logged while answering with the request, its trace id and actor, credentials redacted', () => {
    const { lines, middleware } = logged('warn');
    middleware(request(), response(), (() => {
      (storage.getStore() as Store).logger.warn('something odd');
    }) as () => void);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'something odd',
      trace_id: 'trace-7',
      actor: 'lena',
      project_id: 'p1',
      req: { id: 'trace-7', url: '/v1/projects/p1/vms?[redacted]', headers: { authorization: '[redacted]' } },
    });
  });

  it('writes nothing for a request that logs nothing when request lines are off', () => {
    const { lines, middleware } = logged('warn');
    middleware(request(), response(), (() => undefined) as () => void);
    expect(lines).toEqual([]);
  });
});
