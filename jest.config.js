// Three projects so a developer can run the fast ones alone:
//   unit        pure code, no servers                    (npm run test:fast)
//   integration real PostgreSQL (contract suites, stores)
//   e2e         HCP over HTTP on a real PostgreSQL (slow)
// Servers: HCP_TEST_DATABASE_URL when set (CI sets it), else an embedded PostgreSQL started for the run.
const { pathsToModuleNameMapper } = require('ts-jest');
const { compilerOptions } = require('./tsconfig.json');

const common = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  rootDir: __dirname,
  moduleNameMapper: pathsToModuleNameMapper(compilerOptions.paths, { prefix: '<rootDir>/' }),
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.spec.json' }] },
};

module.exports = {
  // Only e2e and integration suites come near this; a unit test that does has a bug.
  testTimeout: 120_000,
  globalSetup: '<rootDir>/test/support/test-postgres.global-setup.js',
  globalTeardown: '<rootDir>/test/support/test-postgres.global-teardown.js',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/{libs,src,projections,packages}/**/*.spec.ts'] },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e.ts'] },
  ],
};
