const fs = require('node:fs');

module.exports = async function globalTeardown() {
  const started = globalThis.__HCP_TEST_POSTGRES__;
  if (!started) return;
  await started.server.stop();
  fs.rmSync(started.dataDir, { recursive: true, force: true });
};
