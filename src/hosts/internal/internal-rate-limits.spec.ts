import type { HttpReply } from '../../http/edge/http-types';
import { HcpError } from '@hcp/domain';
import type { HcpConfig } from '../../config/hcp-config';
import { InternalRateLimits } from './internal-rate-limits';

const config = { hosts: { perHostPerMinute: 2, enrollPerAddressPerMinute: 1 } } as unknown as HcpConfig;
const response = () => {
  const headers: Record<string, string> = {};
  return { headers, res: { header: (k: string, v: string) => (headers[k] = v) } as unknown as HttpReply };
};

describe('the internal router budgets', () => {
  it('refuses a host past its budget with RATE_LIMITED and Retry-After, leaving other hosts alone', async () => {
    const limits = new InternalRateLimits(config);
    const { res, headers } = response();
    await limits.host('h-1', res);
    await limits.host('h-1', res);
    await expect(limits.host('h-1', res)).rejects.toMatchObject({ code: 'RATE_LIMITED', details: { limit: 'host' } });
    expect(Number(headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    await expect(limits.host('h-2', res)).resolves.toBeUndefined();
  });

  it('keeps enrollment per client address apart from the hosts budget', async () => {
    const limits = new InternalRateLimits(config);
    const { res } = response();
    await limits.enroll('10.0.0.1', res);
    await expect(limits.enroll('10.0.0.1', res)).rejects.toBeInstanceOf(HcpError);
    await expect(limits.enroll('10.0.0.2', res)).resolves.toBeUndefined();
    await expect(limits.host('10.0.0.1', res)).resolves.toBeUndefined();
  });
});
