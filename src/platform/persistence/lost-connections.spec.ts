import { QueryFailedError } from 'typeorm';
import { isConnectionFailure } from './lost-connections';

const withCode = (code: string, message = 'failed') => Object.assign(new Error(message), { code });

describe('isConnectionFailure', () => {
  it.each([
    ['a server shut down by its administrator (57P01)', withCode('57P01')],
    ['a server that crashed (57P02)', withCode('57P02')],
    ['a server that cannot take connections yet (57P03)', withCode('57P03')],
    ['too many connections (53300)', withCode('53300')],
    ['a connection failure of class 08 (08006)', withCode('08006')],
    ['a refused connection', withCode('ECONNREFUSED')],
    ['a reset connection', withCode('ECONNRESET')],
    ['a timed-out socket', withCode('ETIMEDOUT')],
    ['a broken pipe', withCode('EPIPE')],
    ['pg: connection terminated', new Error('Connection terminated unexpectedly')],
    ['pg-pool: no connection in time', new Error('timeout exceeded when trying to connect')],
    [
      'pg-pool: connect timed out',
      new Error('Connection terminated due to connection timeout', { cause: new Error('timeout expired') }),
    ],
    ['a refused connect to each address', new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')])],
    ['TypeORM wrapping a terminated backend', new QueryFailedError('SELECT 1', [], withCode('57P01'))],
    ['an event store error caused by a reset', new Error('append failed', { cause: withCode('ECONNRESET') })],
  ])('recognises %s', (_, err) => {
    expect(isConnectionFailure(err)).toBe(true);
  });

  it.each([
    ['a unique violation', withCode('23505')],
    ['a syntax error', withCode('42601')],
    ['a serialization failure', withCode('40001')],
    ['a TypeORM error of the query itself', new QueryFailedError('INSERT', [], withCode('23503'))],
    ['a plain error', new Error('boom')],
    ['a string', 'Connection terminated unexpectedly'],
    ['nothing', undefined],
  ])('does not take %s for a lost connection', (_, err) => {
    expect(isConnectionFailure(err)).toBe(false);
  });

  it('does not loop on an error that is its own cause', () => {
    const err = new Error('odd') as Error & { cause?: unknown };
    err.cause = err;
    expect(isConnectionFailure(err)).toBe(false);
  });
});
