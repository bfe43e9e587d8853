import type { FastifyRequest } from 'fastify';
import { HcpError } from '@hcp/domain';
import { requireJsonBody } from './media-type';

const outcome = (headers: Record<string, string>): unknown => requireJsonBody({ headers } as FastifyRequest);

describe('requireJsonBody', () => {
  it('lets JSON bodies and requests without a body through', () => {
    expect(outcome({ 'content-type': 'application/json', 'content-length': '2' })).toBeUndefined();
    expect(
      outcome({ 'content-type': 'application/json; charset=utf-8', 'transfer-encoding': 'chunked' }),
    ).toBeUndefined();
    expect(outcome({})).toBeUndefined();
    expect(outcome({ 'content-type': 'text/plain', 'content-length': '0' })).toBeUndefined();
  });

  it.each([
    ['text/plain', { 'content-type': 'text/plain', 'content-length': '13' }, 'text/plain'],
    [
      'a form',
      { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '9' },
      'application/x-www-form-urlencoded',
    ],
    ['a chunked body without a type', { 'transfer-encoding': 'chunked' }, null],
    ['an unreadable type', { 'content-type': '{"x":1}', 'content-length': '2' }, null],
  ])('refuses %s with UNSUPPORTED_MEDIA_TYPE (415)', (_, headers, echoed) => {
    const err = outcome(headers) as HcpError;
    expect(err).toBeInstanceOf(HcpError);
    expect([err.code, err.httpStatus, err.details]).toEqual(['UNSUPPORTED_MEDIA_TYPE', 415, { content_type: echoed }]);
  });
});
