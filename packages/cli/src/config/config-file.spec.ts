import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { configPath, loadConfig, readableByOthers, saveConfig } from './config-file';
import { resolveConnection } from './connection';

describe('config file', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'hcp-cli-config-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lives at $HCP_CONFIG, else under $XDG_CONFIG_HOME or ~/.config', () => {
    expect(configPath({ HCP_CONFIG: '/x/c.yaml' })).toBe('/x/c.yaml');
    expect(configPath({ XDG_CONFIG_HOME: '/xdg', HOME: '/h' })).toBe('/xdg/hcp/config.yaml');
    expect(configPath({ HOME: '/h' })).toBe('/h/.config/hcp/config.yaml');
  });

  it('is written 0600 in a 0700 folder, and tightened when it was readable by others', () => {
    const file = path.join(dir, 'nested', 'config.yaml');
    saveConfig(file, { current_context: 'a', contexts: { a: { url: 'http://h:1', token: 't' } } });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    chmodSync(file, 0o644);
    expect(readableByOthers(file)).toBe(true);
    saveConfig(file, loadConfig(file));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadConfig(file)).toEqual({ current_context: 'a', contexts: { a: { url: 'http://h:1', token: 't' } } });
  });

  it('refuses a file that is not a config, naming the field', () => {
    const file = path.join(dir, 'config.yaml');
    writeFileSync(file, 'contexts:\n  a:\n    url: not a url\n    token: t\n');
    expect(() => loadConfig(file)).toThrow(/contexts\.a\.url/);
  });
});

describe('connection', () => {
  const config = {
    current_context: 'a',
    contexts: { a: { url: 'http://a:1', token: 'ta', project: 'pa' }, b: { url: 'http://b:1', token: 'tb' } },
  };

  it('takes flags over the environment over the current context', () => {
    expect(resolveConnection(config, {}, {})).toEqual({ url: 'http://a:1', token: 'ta', project: 'pa', context: 'a' });
    expect(resolveConnection(config, { context: 'b' }, {})).toMatchObject({ url: 'http://b:1', project: undefined });
    expect(resolveConnection(config, {}, { HCP_CONTEXT: 'b' })).toMatchObject({ url: 'http://b:1' });
    expect(resolveConnection(config, { project: 'x' }, { HCP_TOKEN: 'env', HCP_PROJECT: 'y' })).toMatchObject({
      token: 'env',
      project: 'x',
    });
    expect(resolveConnection({ contexts: {} }, {}, { HCP_URL: 'http://e:1', HCP_TOKEN: 'e' })).toMatchObject({
      url: 'http://e:1',
    });
  });

  it('is a usage error without an address and a token, or with an unknown context', () => {
    expect(() => resolveConnection({ contexts: {} }, {}, {})).toThrow(/not logged in/);
    expect(() => resolveConnection(config, { context: 'zz' }, {})).toThrow(/no context named "zz"/);
  });
});
