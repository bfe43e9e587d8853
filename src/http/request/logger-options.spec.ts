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
