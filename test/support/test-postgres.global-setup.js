// Jest global setup: the integration and e2e suites need a real PostgreSQL. CI (and anyone who has one)
// passes HCP_TEST_DATABASE_URL; without it, the suites get HCP's own embedded PostgreSQL in a temporary
// folder, so `npm test` works on a fresh clone after `npm install` alone.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');

const root = path.join(__dirname, '..', '..');

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

module.exports = async function globalSetup(globalConfig) {
  if (process.env.HCP_TEST_DATABASE_URL) return;
  const needsServer = globalConfig.selectProjects === undefined || globalConfig.selectProjects.some((p) => p !== 'unit');
  if (!needsServer) return;
  require('ts-node').register({ project: path.join(root, 'tsconfig.json'), transpileOnly: true });
  require('tsconfig-paths').register({ baseUrl: root, paths: require(path.join(root, 'tsconfig.json')).compilerOptions.paths });
  const { startEmbeddedPostgres } = require(path.join(root, 'libs/local-postgres/src/index.ts'));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hcp-test-pg-'));
  fs.chmodSync(dataDir, 0o755);
  const server = await startEmbeddedPostgres({ dataDir, port: await freePort(), logger: { log() {}, warn: (m) => console.warn(m) } });
  process.env.HCP_TEST_DATABASE_URL = server.connectionString;
  globalThis.__HCP_TEST_POSTGRES__ = { server, dataDir };
};
