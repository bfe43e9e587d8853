import { HcpApiError, HcpTimeoutError } from '@hcp/client';
import { EXIT, exitCodeOf, OutcomeError, UsageError } from './exit-codes';

const answer = (status: number, code: string) => new HcpApiError({ status, code, message: code });

describe('exit codes', () => {
  it.each([
    [answer(400, 'INVALID_REQUEST'), EXIT.REFUSED],
    [answer(401, 'UNAUTHORIZED'), EXIT.REFUSED],
    [answer(403, 'QUOTA_EXCEEDED'), EXIT.REFUSED],
    [answer(404, 'NOT_FOUND'), EXIT.REFUSED],
    [answer(409, 'CONFLICT'), EXIT.REFUSED],
    [answer(422, 'FEATURE_NOT_SUPPORTED'), EXIT.REFUSED],
    [answer(429, 'RATE_LIMITED'), EXIT.UNAVAILABLE],
    [answer(500, 'INTERNAL_ERROR'), EXIT.UNAVAILABLE],
    [answer(503, 'PROVIDER_UNAVAILABLE'), EXIT.UNAVAILABLE],
    [answer(0, 'UNREACHABLE'), EXIT.UNAVAILABLE],
    [new HcpTimeoutError('still running'), EXIT.TIMED_OUT],
    [new UsageError('bad flag'), EXIT.USAGE],
    [new OutcomeError(EXIT.JOB_FAILED, 'failed'), EXIT.JOB_FAILED],
    [new Error('a bug'), EXIT.INTERNAL],
  ])('maps %p to its code', (err, code) => expect(exitCodeOf(err)).toBe(code));

  it('gives each outcome a code of its own', () => {
    const codes = Object.values(EXIT);
    expect(new Set(codes).size).toBe(codes.length);
  });
});
