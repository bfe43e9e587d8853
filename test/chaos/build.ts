import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { trackFolder } from './children';

const ROOT = path.join(__dirname, '..', '..');

/**
 * Compiles HCP once for the run (emit only, no type check: `npm run typecheck` does that) so that each of
 * the many restarts boots in seconds instead of compiling the whole app again under ts-node. The output
 * sits under node_modules so the compiled files resolve the project's packages; one folder per run, so
 * two runs never share one.
 */
export function buildHcp(): string {
  const outDir = path.join(ROOT, 'node_modules', '.cache', `hcp-chaos-build-${process.pid}`);
  trackFolder(outDir);
  const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
  const project = path.join(ROOT, 'tsconfig.build.json');
  execFileSync(bin('tsc'), ['-p', project, '--noCheck', '--sourceMap', 'false', '--outDir', outDir], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  execFileSync(bin('tsc-alias'), ['-p', project, '--outDir', outDir], { cwd: ROOT, stdio: 'inherit' });
  return outDir;
}
