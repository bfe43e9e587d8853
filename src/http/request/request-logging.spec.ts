import { Writable } from 'node:stream';
import type { NextFunction, Request, Response } from 'express';
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

const request = () =>
  ({
    traceId: 'trace-7',
    method: 'GET',
    url: '/v1/projects/p1/vms?token=secret',
    originalUrl: '/v1/projects/p1/vms?token=secret',
    headers: { authorization: 'Bearer secret' },
    params: { project_id: 'p1' },
    socket: {},
    user: { sub: 'lena' },
  }) as unknown as Request;

const response = () => ({ on: () => undefined, removeListener: () => undefined }) as unknown as Response;

describe('request logging', () => {
  it('writes a line logged while answering with the request, its trace id and actor, credentials redacted', () => {
    const { lines, middleware } = logged('warn');
    middleware(request(), response(), (() => {
      (storage.getStore() as Store).logger.warn('something odd');
    }) as NextFunction);
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
    middleware(request(), response(), (() => undefined) as NextFunction);
    expect(lines).toEqual([]);
  });
});
