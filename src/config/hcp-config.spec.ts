import * as fs from 'node:fs';
import * as path from 'node:path';
import { CONFIG_VARIABLES, ConfigError, loadConfig, logLevelEnabled } from './hcp-config';

describe('configuration', () => {
  it('runs the embedded default with no variables at all', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      databaseUrl: null,
      eventStoreConnectionString: null,
      roles: ['api', 'worker', 'projections'],
    });
    expect(config.auth.mode).toBe('dev');
  });

  it("tells which log lines a LOG_LEVEL writes, in pino's order", () => {
    expect(logLevelEnabled('warn', 'info')).toBe(false);
    expect(logLevelEnabled('warn', 'warn')).toBe(true);
    expect(logLevelEnabled('warn', 'error')).toBe(true);
    expect(logLevelEnabled('info', 'info')).toBe(true);
    expect(logLevelEnabled('trace', 'debug')).toBe(true);
    expect(logLevelEnabled('fatal', 'error')).toBe(false);
  });

  it('stops on a bad value with a message naming every bad variable', () => {
    expect(() => loadConfig({ PORT: 'eighty', HCP_ROLES: 'api,cook', DATABASE_URL: 'mysql://x' })).toThrow(ConfigError);
    try {
      loadConfig({ PORT: 'eighty', HCP_ROLES: 'api,cook', DATABASE_URL: 'mysql://x' });
    } catch (err) {
      const message = (err as Error).message;
      expect(message).toMatch(/PORT/);
      expect(message).toMatch(/HCP_ROLES/);
      expect(message).toMatch(/DATABASE_URL/);
    }
  });

  it('refuses an API semi-space V8 would not keep as given: outside 1 to 64 MB, or not a power of two', () => {
    expect(loadConfig({}).apiSemiSpaceMb).toBe(8);
    expect(loadConfig({ HCP_API_SEMI_SPACE_MB: '16' }).apiSemiSpaceMb).toBe(16);
    for (const bad of ['0', '12', '65', '128', '4.5', 'big']) {
      expect(() => loadConfig({ HCP_API_SEMI_SPACE_MB: bad })).toThrow(/HCP_API_SEMI_SPACE_MB/);
    }
  });

  it('requires exactly one JWKS source in jwks mode', () => {
    expect(() => loadConfig({ HCP_AUTH_MODE: 'jwks' })).toThrow(/HCP_JWKS_FILE/);
    expect(() =>
      loadConfig({ HCP_AUTH_MODE: 'jwks', HCP_JWKS_FILE: '/k.json', HCP_JWKS_URL: 'https://idp/jwks' }),
    ).toThrow(/exactly one/);
    expect(
      loadConfig({ HCP_AUTH_MODE: 'jwks', HCP_JWKS_URL: 'https://idp/jwks', HCP_PUBLIC_URL: 'https://hcp.example' })
        .auth.jwksUrl,
    ).toBe('https://idp/jwks');
  });

  it('requires a public URL in jwks mode, so no handed-out URL comes from a request Host', () => {
    expect(() => loadConfig({ HCP_AUTH_MODE: 'jwks', HCP_JWKS_FILE: '/k.json' })).toThrow(/HCP_PUBLIC_URL/);
    const config = loadConfig({
      HCP_AUTH_MODE: 'jwks',
      HCP_JWKS_FILE: '/k.json',
      HCP_PUBLIC_URL: 'https://hcp.example/',
    });
    expect(config.console.publicUrl).toBe('https://hcp.example');
  });

  it('listens on loopback in dev mode unless HOST says otherwise', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(
      loadConfig({ HCP_AUTH_MODE: 'jwks', HCP_JWKS_FILE: '/k.json', HCP_PUBLIC_URL: 'https://hcp.example' }).host,
    ).toBe('0.0.0.0');
  });

  it('allows only loopback Host names by default, and refuses entries that are not host names', () => {
    expect(loadConfig({}).console.allowedHosts).toEqual(['localhost', '127.0.0.1', '[::1]']);
    expect(loadConfig({ HCP_ALLOWED_HOSTS: 'Dev.Example, localhost' }).console.allowedHosts).toEqual([
      'dev.example',
      'localhost',
    ]);
    expect(() => loadConfig({ HCP_ALLOWED_HOSTS: 'localhost:8080' })).toThrow(/HCP_ALLOWED_HOSTS/);
    expect(() => loadConfig({ HCP_ALLOWED_HOSTS: 'http://x' })).toThrow(/HCP_ALLOWED_HOSTS/);
  });

  it('accepts HS256 only when dev mode is explicitly on', () => {
    const secret = 'x'.repeat(32);
    expect(loadConfig({ HCP_JWT_DEV_HS256_SECRET: secret }).auth.devHs256Secret).toBe(secret);
    expect(() =>
      loadConfig({
        HCP_AUTH_MODE: 'jwks',
        HCP_JWKS_FILE: '/k.json',
        HCP_PUBLIC_URL: 'https://hcp.example',
        HCP_JWT_DEV_HS256_SECRET: secret,
      }),
    ).toThrow(/only accepted with HCP_AUTH_MODE=dev/);
    expect(() => loadConfig({ HCP_JWT_DEV_HS256_SECRET: 'short' })).toThrow(/at least 32/);
  });

  it('refuses a shutdown drain delay that leaves no time of the grace period to stop in order', () => {
    expect(loadConfig({}).shutdown).toEqual({ graceMs: 25_000, drainDelayMs: 0 });
    expect(() => loadConfig({ HCP_SHUTDOWN_GRACE_MS: '5000', HCP_SHUTDOWN_DRAIN_DELAY_MS: '5000' })).toThrow(
      /HCP_SHUTDOWN_DRAIN_DELAY_MS must be shorter than HCP_SHUTDOWN_GRACE_MS/,
    );
  });

  it('runs extra checks owned by other modules', () => {
    expect(() => loadConfig({}, [() => 'HCP_SIMULATOR_FAULTS: nope'])).toThrow(/nope/);
  });

  it('lists every variable with its default in .env.example', () => {
    const example = fs.readFileSync(path.join(__dirname, '../../.env.example'), 'utf8');
    for (const v of CONFIG_VARIABLES) {
      expect(example).toContain(`\n${v.name}=${v.default}\n`);
    }
  });

  it('documents every variable in the README configuration table', () => {
    const readme = fs.readFileSync(path.join(__dirname, '../../README.md'), 'utf8');
    for (const v of CONFIG_VARIABLES) {
      expect(readme).toContain(`| \`${v.name}\` |`);
    }
  });
});
