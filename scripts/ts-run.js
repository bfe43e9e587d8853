#!/usr/bin/env node
// Runs a TypeScript entry point of this repo without a build: `node scripts/ts-run.js src/cli/token.ts ...`.
// Registers ts-node and the tsconfig path aliases in code rather than with `-r tsconfig-paths/register`,
// which reads a CLI's own `--project` flag as the path of a tsconfig file.
const path = require('node:path');
const root = path.join(__dirname, '..');
const tsconfig = require(path.join(root, 'tsconfig.json'));
require('ts-node').register({ project: path.join(root, 'tsconfig.json'), transpileOnly: true });
require('tsconfig-paths').register({ baseUrl: root, paths: tsconfig.compilerOptions.paths });
const [entry, ...args] = process.argv.slice(2);
process.argv = [process.argv[0], path.resolve(entry), ...args];
require(path.resolve(entry));
