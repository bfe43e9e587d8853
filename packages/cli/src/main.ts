#!/usr/bin/env node
// `hcp`, the command line for HCP's API. Installed with `npm run build && npm link` (packages/cli/README.md).
import { runCli } from './program';

runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
}).then(
  (code) => {
    // Let pending writes to a pipe finish before leaving.
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
