import type { ArgumentsHost } from '@nestjs/common';
import { HcpError } from '@hcp/domain';
import type { RequestRecorder } from '../request/request-recorder';
import type { RefusalVerdict } from '../rate-limit/refusal-budget';
import { HcpExceptionFilter } from './hcp-exception.filter';
import type { RefusalLedger } from './refusal-ledger';

function setup(verdict: RefusalVerdict) {
  const refused = jest.fn().mockResolvedValue(undefined);
  const judge = jest.fn().mockResolvedValue(verdict);
  const filter = new HcpExceptionFilter(
    { refused } as unknown as RequestRecorder,
    { judge } as unknown as RefusalLedger,
  );
  const headers: Record<string, string> = {};
  let answered: (value: { status: number; body: { error: { code: string } } }) => void;
  const answer = new Promise<{ status: number; body: { error: { code: string } } }>((r) => (answered = r));
  // A reply as Fastify's: chained status, type and send.
  const res = {
    unavailable: undefined as string | undefined,
    header: (name: string, value: string) => (headers[name.toLowerCase()] = value),
    status: (status: number) => ({
      type: () => ({ send: (body: { error: { code: string } }) => answered({ status, body }) }),
    }),
  };
  const req = {
    ip: '192.0.2.9',
    method: 'GET',
    url: '/v1/projects/p/vms',
    params: { project_id: 'p' },
    routeOptions: { url: '/v1/projects/:project_id/vms' },
    headers: {},
  };
  const host = { switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }) } as unknown as ArgumentsHost;
  return { filter, host, refused, judge, headers, answer, res };
}

describe('refusals in the exception filter', () => {
  const unauthorized = () => new HcpError('UNAUTHORIZED', 'a valid bearer token is required');

  it('records a refusal within the budget, judged by the client address, then answers it', async () => {
    const { filter, host, refused, judge, answer } = setup({ kind: 'record' });
    filter.catch(unauthorized(), host);
    expect((await answer).status).toBe(401);
    expect(judge).toHaveBeenCalledWith({ address: '192.0.2.9', actor: null, code: 'UNAUTHORIZED' });
    expect(refused).toHaveBeenCalledTimes(1);
  });

  it('answers a refusal past the budget alike without recording it', async () => {
    const { filter, host, refused, answer } = setup({ kind: 'count' });
    filter.catch(unauthorized(), host);
    expect((await answer).status).toBe(401);
    expect(refused).not.toHaveBeenCalled();
  });

  it('answers an anonymous flood past the higher budget 429 with Retry-After, without recording it', async () => {
    const { filter, host, refused, headers, answer } = setup({ kind: 'reject', retryAfterSeconds: 17 });
    filter.catch(unauthorized(), host);
    const { status, body } = await answer;
    expect(status).toBe(429);
    expect(body.error.code).toBe('RATE_LIMITED');
    expect(headers['retry-after']).toBe('17');
    expect(refused).not.toHaveBeenCalled();
  });

  it('does not judge errors that are not refusals', async () => {
    const { filter, host, judge, answer } = setup({ kind: 'record' });
    filter.catch(new HcpError('CONFLICT', 'busy'), host);
    expect((await answer).status).toBe(409);
    expect(judge).not.toHaveBeenCalled();
  });
});

describe('outages in the exception filter', () => {
  it('answers a lost database connection 503 PROVIDER_UNAVAILABLE with Retry-After, not 500', async () => {
    const { filter, host, headers, answer, res } = setup({ kind: 'record' });
    filter.catch(
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      host,
    );
    const { status, body } = await answer;
    expect(status).toBe(503);
    expect(body.error).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', details: { dependency: 'database' } });
    expect(Number(headers['retry-after'])).toBeGreaterThan(0);
    expect(res.unavailable).toBe('database');
  });
});
