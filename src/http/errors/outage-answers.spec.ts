import { HcpError } from '@hcp/domain';
import { QueryFailedError } from 'typeorm';
import { toTaxonomyError } from './error-envelope';
import { outageOf, UnavailableError } from '../../platform/availability/unavailable-error';

const withCode = (code: string) => Object.assign(new Error('failed'), { code });

describe('outages as answers', () => {
  it('turns a lost database connection into a retryable 503 PROVIDER_UNAVAILABLE naming the database', () => {
    const error = toTaxonomyError(new QueryFailedError('SELECT 1', [], withCode('57P01')));
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(error.httpStatus).toBe(503);
    expect(error.retryable).toBe(true);
    expect(error.details).toEqual({ dependency: 'database' });
    expect((error as UnavailableError).retryAfterSeconds).toBeGreaterThan(0);
    expect(error.message).toMatch(/database is unavailable; retry after the time in Retry-After/);
  });

  it('names the event store when EventStoreDB cannot be reached', () => {
    const unavailable = Object.assign(new Error('14 UNAVAILABLE: No connection established'), {
      type: 'unavailable',
      code: 14,
    });
    expect(outageOf(unavailable)?.details).toEqual({ dependency: 'event_store' });
  });

  it('leaves errors of the work itself to the taxonomy (500 without their message)', () => {
    expect(outageOf(withCode('23505'))).toBeNull();
    const error = toTaxonomyError(withCode('23505'));
    expect(error.code).toBe('INTERNAL_ERROR');
    expect(error.message).not.toMatch(/failed/);
  });

  it('keeps taxonomy errors as they are, even when they mention a connection', () => {
    const conflict = new HcpError('CONFLICT', 'Connection terminated unexpectedly');
    expect(toTaxonomyError(conflict)).toBe(conflict);
  });

  it("maps Fastify's own refusals (a body over the limit) by their status, not as an outage", () => {
    const tooLarge = Object.assign(new Error('Request body is too large'), {
      code: 'FST_ERR_CTP_BODY_TOO_LARGE',
      statusCode: 413,
    });
    expect([toTaxonomyError(tooLarge).code, toTaxonomyError(tooLarge).message]).toEqual([
      'INVALID_REQUEST',
      'Request body is too large',
    ]);
  });
});
