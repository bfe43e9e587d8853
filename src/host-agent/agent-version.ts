import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

/** This checkout's version (package.json), found from src/host-agent and from its build in dist/ alike. */
export function agentVersion(from = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        const version = (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version;
        if (typeof version === 'string') return version;
      } catch {
        // Unreadable manifest: keep looking up, then fall back.
      }
    }
    if (path.dirname(dir) === dir) return 'unknown';
  }
}
