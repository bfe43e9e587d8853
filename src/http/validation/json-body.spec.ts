import { gzipSync } from 'node:zlib';
import { HcpError } from '@hcp/domain';
import { parseJsonBody } from './json-body';

const LIMIT = 1024;
const parse = (body: string | Buffer, headers: Record<string, string> = {}) =>
  parseJsonBody({ headers: { 'content-type': 'application/json', ...headers } }, Buffer.from(body), LIMIT);
const refusal = (body: string | Buffer, headers: Record<string, string> = {}) => {
  try {
    parse(body, headers);
  } catch (err) {
    return [(err as HcpError).code, (err as HcpError).httpStatus, (err as HcpError).message];
  }
  return 'parsed';
};

describe('a JSON request body', () => {
  it('is read as an object or an array, with or without a UTF-8 charset, and as {} when empty', () => {
    expect(parse('{"name":"vm-ü","n":[1,2]}')).toEqual({ name: 'vm-ü', n: [1, 2] });
    expect(parse(' [1]', { 'content-type': 'application/json; charset=UTF-8' })).toEqual([1]);
    expect(parse('')).toEqual({});
    expect(parse('  \n')).toEqual({});
  });

  it('keeps a "__proto__" key as data, never as the prototype', () => {
    const body = parse('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['a bare string', '"text"'],
    ['a number', '12'],
    ['broken JSON', '{"name":'],
    ['trailing garbage', '{} x'],
  ])('refuses %s with INVALID_REQUEST (400)', (_, body) => {
    expect(refusal(body)).toEqual(['INVALID_REQUEST', 400, 'request body is not valid JSON']);
  });

  it('refuses a charset other than UTF-8', () => {
    expect(refusal('{}', { 'content-type': 'application/json; charset=latin1' })).toEqual([
      'INVALID_REQUEST',
      400,
      'unsupported charset "LATIN1"',
    ]);
  });

  it('reads a gzip body, and refuses one that decompresses past the limit or an unknown encoding', () => {
    expect(parse(gzipSync('{"a":1}'), { 'content-encoding': 'gzip' })).toEqual({ a: 1 });
    const bomb = gzipSync(`{"a":"${'x'.repeat(LIMIT * 4)}"}`);
    expect(refusal(bomb, { 'content-encoding': 'gzip' })).toEqual(['INVALID_REQUEST', 400, 'request entity too large']);
    expect(refusal('{}', { 'content-encoding': 'zstd-x' })[0]).toBe('INVALID_REQUEST');
  });
});
