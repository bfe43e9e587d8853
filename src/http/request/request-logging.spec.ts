import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requestLogFields, requestLoggerOptions } from './logger-options';
import { requestLogging } from './request-logging';

function logged(level: 'warn' | 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { lines, hook: requestLogging({ ...requestLoggerOptions(level), stream }) };
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

/** Node's response under `raw`: pino-http writes its line when the response finishes. */
const response = () => {
  const raw = Object.assign(new EventEmitter(), {
    statusCode: 202,
    writableEnded: true,
    headersSent: true,
    getHeaders: () => ({ 'content-type': 'application/json' }),
  });
  return { raw } as unknown as FastifyReply;
};

describe('request logging', () => {
  it('writes one line per request at info: its answer, the request, its trace id and actor, credentials redacted', () => {
    const { lines, hook } = logged('info');
    const reply = response();
    let passed = 0;
    hook!(request(), reply, () => passed++);
    expect(passed).toBe(1);
    expect(lines).toEqual([]);
    (reply.raw as unknown as EventEmitter).emit('finish');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'request completed',
      trace_id: 'trace-7',
      actor: 'lena',
      project_id: 'p1',
      res: { statusCode: 202 },
      req: { id: 'trace-7', url: '/v1/projects/p1/vms?[redacted]', headers: { authorization: '[redacted]' } },
    });
  });

  it('adds no hook when request lines are off, so a request that logs nothing costs nothing', () => {
    expect(logged('warn').hook).toBeNull();
  });

  it('names the request in a line about it: trace id, actor, project, method and URL without the query', () => {
    const fields = requestLogFields(request() as unknown as Parameters<typeof requestLogFields>[0]);
    expect(fields).toEqual({
      trace_id: 'trace-7',
      actor: 'lena',
      project_id: 'p1',
      req: { id: 'trace-7', method: 'GET', url: '/v1/projects/p1/vms?[redacted]' },
    });
    expect(JSON.stringify(fields)).not.toContain('secret');
  });
});
