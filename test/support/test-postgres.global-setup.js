// Jest global setup: the integration and e2e suites need a real PostgreSQL. CI (and anyone who has one)
// passes HCP_TEST_DATABASE_URL; without it, the suites get HCP's own embedded PostgreSQL in a temporary
// folder, so `npm test` works on a fresh clone after `npm install` alone.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');

module.exports = async function globalSetup(globalConfig) {
  if (process.env.HCP_TEST_DATABASE_URL) return;
  const needsServer =
    globalConfig.selectProjects === undefined || globalConfig.selectProjects.some((p) => p !== 'unit');
  if (!needsServer) return;
  require('ts-node').register({ project: path.join(root, 'tsconfig.json'), transpileOnly: true });
  require('tsconfig-paths').register({
    baseUrl: root,
    paths: require(path.join(root, 'tsconfig.json')).compilerOptions.paths,
  });
  const { startEmbeddedPostgres } = require(path.join(root, 'libs/local-postgres/src/index.ts'));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hcp-test-pg-'));
  fs.chmodSync(dataDir, 0o755);
  // No port: the fresh data folder gets a free one of its own, so parallel runs never collide.
  const server = await startEmbeddedPostgres({ dataDir, logger: { log() {}, warn: (m) => console.warn(m) } });
  process.env.HCP_TEST_DATABASE_URL = server.connectionString;
  globalThis.__HCP_TEST_POSTGRES__ = { server, dataDir };
};
