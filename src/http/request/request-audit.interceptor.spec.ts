import { NotFoundException } from '@nestjs/common';
import { HcpError } from '@hcp/domain';
import { failureOf } from './request-audit.interceptor';

describe('the outcome recorded for a failed request', () => {
  it('is the status and code of a taxonomy error', () => {
    expect(failureOf(new HcpError('QUOTA_EXCEEDED', 'no room'))).toEqual({
      status: new HcpError('QUOTA_EXCEEDED', 'x').httpStatus,
      error_code: 'QUOTA_EXCEEDED',
    });
  });

  it('is the status of a framework error, without inventing a code for it', () => {
    expect(failureOf(new NotFoundException())).toEqual({ status: 404, error_code: null });
  });

  it('is a 500 INTERNAL_ERROR for anything else, as the exception filter answers it', () => {
    expect(failureOf(new Error('bug'))).toEqual({ status: 500, error_code: 'INTERNAL_ERROR' });
    expect(failureOf(undefined)).toEqual({ status: 500, error_code: 'INTERNAL_ERROR' });
  });
});
