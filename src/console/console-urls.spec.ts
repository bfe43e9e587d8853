import { loadConfig } from '../config/hcp-config';
import { consoleOriginsOf, isAllowedConsoleOrigin } from './console-urls';

const JWKS = { HCP_AUTH_MODE: 'jwks', HCP_JWKS_FILE: '/k.json', HCP_PUBLIC_URL: 'https://hcp.example.com/' };

describe('isAllowedConsoleOrigin', () => {
  it('allows the public URL origin, and nothing else in jwks mode', () => {
    const origins = consoleOriginsOf(loadConfig(JWKS));
    expect(isAllowedConsoleOrigin(origins, 'https://hcp.example.com')).toBe(true);
    expect(isAllowedConsoleOrigin(origins, 'http://hcp.example.com')).toBe(false);
    expect(isAllowedConsoleOrigin(origins, 'https://hcp.example.com:8443')).toBe(false);
    expect(isAllowedConsoleOrigin(origins, 'http://localhost:8080')).toBe(false);
  });

  it('allows the allowed hosts on any port in dev mode', () => {
    const origins = consoleOriginsOf(loadConfig({}));
    expect(isAllowedConsoleOrigin(origins, 'http://localhost:3000')).toBe(true);
    expect(isAllowedConsoleOrigin(origins, 'http://127.0.0.1:8080')).toBe(true);
    expect(isAllowedConsoleOrigin(origins, 'http://[::1]:8080')).toBe(true);
  });

  it.each([
    'https://evil.example',
    'null',
    'http://localhost.evil.example',
    'http://localhost@evil.example',
    'file://',
  ])('refuses %s in dev mode', (origin) => {
    expect(isAllowedConsoleOrigin(consoleOriginsOf(loadConfig({})), origin)).toBe(false);
  });
});
