import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

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
export async function serveWebconsoleAssets(app: NestFastifyApplication): Promise<void> {
  const root = projectRoot();
  const novnc = path.join(root, 'node_modules', '@novnc', 'novnc');
  // No index, no redirects, no dotfiles; a missing file is the API's NOT_FOUND.
  const options = { index: false, dotfiles: 'deny', redirect: false, decorateReply: false } as const;
  await app.register(fastifyStatic, {
    ...options,
    root: path.join(novnc, 'core'),
    prefix: '/console/assets/novnc/core/',
  });
  await app.register(fastifyStatic, {
    ...options,
    root: path.join(novnc, 'vendor'),
    prefix: '/console/assets/novnc/vendor/',
  });
  const own = new Set(['/webconsole.js', '/webconsole.css']);
  await app.register(fastifyStatic, {
    ...options,
    root: WEBCONSOLE_DIR(),
    prefix: '/console/assets/',
    allowedPath: (pathName: string) => own.has(pathName),
  });
}
