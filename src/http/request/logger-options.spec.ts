import { PROJECT_ID_PATTERN } from '@hcp/domain';
import { LIMITS } from '../validation/limits';
import { loggedUrl } from './logger-options';

describe('request log lines', () => {
  it('log a URL without its query string, names included', () => {
    expect(loggedUrl('/v1/console/c1/websocket?token=abc')).toBe('/v1/console/c1/websocket?[redacted]');
    expect(loggedUrl('/v1/projects/p/vms?eyJhbGciOi.x.y')).toBe('/v1/projects/p/vms?[redacted]');
  });

  it('log a URL without a query string as it is', () => {
    expect(loggedUrl('/v1/projects/p/vms')).toBe('/v1/projects/p/vms');
  });
});

describe('recorded project ids', () => {
  it('follow the API project-id pattern (the domain keeps its own copy, as libs cannot import src)', () => {
    expect(PROJECT_ID_PATTERN.source).toBe(LIMITS.projectId.source);
    expect(PROJECT_ID_PATTERN.flags).toBe(LIMITS.projectId.flags);
  });
});
