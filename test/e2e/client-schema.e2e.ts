import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.join(__dirname, '../..');
const COMMITTED = path.join(ROOT, 'packages/client/src/schema.ts');

// @hcp/client's types are generated from the document HCP serves; a route, field or status changed without
// `npm run client:generate` would leave the client (and every caller typed by it) describing another API.
// The generator runs as `npm run client:generate` does, in its own node process (see scripts/generate-client.ts).
describe('@hcp/client schema.ts', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'hcp-client-schema-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is exactly what generating from the served /openapi.json gives (else: npm run client:generate)', async () => {
    const out = path.join(dir, 'schema.ts');
    await promisify(execFile)(process.execPath, ['scripts/ts-run.js', 'scripts/generate-client.ts', '--out', out], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'warn' },
      maxBuffer: 16 * 1024 * 1024,
    });
    const generated = readFileSync(out, 'utf8');
    const committed = readFileSync(COMMITTED, 'utf8');
    if (generated === committed) return;
    const a = committed.split('\n');
    const b = generated.split('\n');
    const line = a.findIndex((l, i) => l !== b[i]);
    throw new Error(
      `packages/client/src/schema.ts is stale: run \`npm run client:generate\`. First difference at line ${line + 1}:\n` +
        `  committed: ${a[line]}\n  generated: ${b[line]}`,
    );
  });
});
