import { HcpError } from '@hcp/domain';
import { MessagingError } from '@hcp/messaging';
import { CheckpointMovedError, errorText, isTransientFailure } from './dead-letters';

const withCode = (code: string, message = 'failed') => Object.assign(new Error(message), { code });

describe('isTransientFailure (what is never dead-lettered)', () => {
  it.each([
    ['a lost connection', withCode('ECONNRESET')],
    ['a refused connection', withCode('ECONNREFUSED')],
    ['pg: connection terminated', new Error('Connection terminated unexpectedly')],
    ['a query timeout', new Error('Query read timeout')],
    ['SQLSTATE 08006 (connection failure)', withCode('08006')],
    ['SQLSTATE 40001 (serialization failure)', withCode('40001')],
    ['SQLSTATE 40P01 (deadlock)', withCode('40P01')],
    ['SQLSTATE 57P01 (admin shutdown)', withCode('57P01')],
    ['SQLSTATE 57014 (statement timeout)', withCode('57014')],
    ['SQLSTATE 53300 (too many connections)', withCode('53300')],
    ['a broker that did not acknowledge', new MessagingError('PUBLISH_FAILED', 'broker down')],
    ['a broker timeout', new MessagingError('PUBLISH_TIMEOUT', 'no ack')],
    ['a retryable HCP error', new HcpError('PROVIDER_UNAVAILABLE', 'down')],
    ['a checkpoint another instance moved', new CheckpointMovedError('audit')],
    ['a transient cause under a wrapper', new Error('apply failed', { cause: withCode('ECONNRESET') })],
  ])('is transient: %s', (_what, err) => {
    expect(isTransientFailure(err)).toBe(true);
  });

  it.each([
    [
      'an envelope the schema refuses',
      new MessagingError('INVALID_MESSAGE', 'invalid message e1: project_id too long'),
    ],
    ['SQLSTATE 22P02 (invalid text for uuid)', withCode('22P02', 'invalid input syntax for type uuid')],
    ['SQLSTATE 23505 (unique violation)', withCode('23505')],
    ['SQLSTATE 22001 (value too long)', withCode('22001')],
    ['a bug in a projection', new TypeError("Cannot read properties of undefined (reading 'job_id')")],
    ['a non-retryable HCP error', new HcpError('INVALID_REQUEST', 'bad')],
    ['something not an error', 'just a string'],
  ])('is not transient: %s', (_what, err) => {
    expect(isTransientFailure(err)).toBe(false);
  });
});

describe('errorText', () => {
  it('names the error and bounds its length', () => {
    expect(errorText(new TypeError('bad'))).toBe('TypeError: bad');
    const long = errorText(new Error('x'.repeat(5000)));
    expect(long.length).toBe(2000);
    expect(long.endsWith('…')).toBe(true);
  });
});
