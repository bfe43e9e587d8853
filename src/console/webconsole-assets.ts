import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Router, static as serveStatic } from 'express';

/**
 * Files of the webconsole page: its own (src/console/webconsole, served from the source tree because the
 * build compiles TypeScript only) and noVNC's browser modules from its npm package. Both are found from
 * the project root, so `npm start` (dist/) and the tests (src/) serve the same files.
 */
function projectRoot(from: string = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'src', 'console', 'webconsole')))
      return dir;
    if (path.dirname(dir) === dir)
      throw new Error(`HCP's project root (with src/console/webconsole) not found above ${from}`);
  }
}

const WEBCONSOLE_DIR = () => path.join(projectRoot(), 'src', 'console', 'webconsole');

/** The page itself; it learns its session from its own path and its token from the fragment. */
export function webconsolePage(): string {
  return readFileSync(path.join(WEBCONSOLE_DIR(), 'webconsole.html'), 'utf8');
}

/** `/console/assets/*`: the page's script and style, and noVNC under `novnc/` (its core and vendored modules only). */
export function webconsoleAssets(): Router {
  const root = projectRoot();
  const novnc = path.join(root, 'node_modules', '@novnc', 'novnc');
  const options = { index: false, dotfiles: 'deny', fallthrough: false, redirect: false } as const;
  const router = Router();
  router.use('/novnc/core', serveStatic(path.join(novnc, 'core'), options));
  router.use('/novnc/vendor', serveStatic(path.join(novnc, 'vendor'), options));
  router.get(['/webconsole.js', '/webconsole.css'], serveStatic(WEBCONSOLE_DIR(), options));
  return router;
}
