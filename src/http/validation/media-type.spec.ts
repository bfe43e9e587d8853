import type { NextFunction, Request, Response } from 'express';
import { HcpError } from '@hcp/domain';
import { requireJsonBody } from './media-type';

/** A request as express presents it: headers, and `is` as express answers it for those headers. */
function request(headers: Record<string, string>): Request {
  const type = headers['content-type']?.split(';')[0].trim().toLowerCase();
  return { headers, is: (t: string) => (type === t ? t : false) } as unknown as Request;
}

function outcome(headers: Record<string, string>): unknown {
  let passed: unknown = 'not called';
  requireJsonBody(
    request(headers),
    {} as Response,
    ((err?: unknown) => {
      passed = err;
    }) as NextFunction,
  );
  return passed;
}

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
