// Three projects so a developer can run the fast ones alone:
//   unit        pure code, no servers                    (npm run test:fast)
//   integration real PostgreSQL (contract suites, stores)  needs HCP_TEST_DATABASE_URL
//   e2e         HCP over HTTP on a real PostgreSQL (slow)  needs HCP_TEST_DATABASE_URL
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
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/{libs,src,projections}/**/*.spec.ts'] },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e.ts'] },
  ],
};
