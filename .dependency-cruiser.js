// The layering of HCP (ARCHITECTURE.md, "Rules the checker enforces"). `npm run lint:deps` runs it.
// Contexts are the folders under src/ that have an index.ts; they meet only through it.
const CONTEXTS = '(vms|jobs|quotas|catalog|ops|console|reconcile|orphans|hosts|audit|metering|projections-admin)';
const SHARED = '(platform|http|config)';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'domain-is-pure',
      comment:
        'libs/domain is state machines and events: no Nest, no I/O, nothing outside itself but zod and immutable (data structures).',
      severity: 'error',
      from: { path: '^libs/domain/' },
      // zod (the events' runtime schemas) is pure data validation, immutable persistent collections (a
      // project's quota reservations): no I/O, no framework.
      to: { pathNot: ['^libs/domain/', '^node_modules/zod/', '^node_modules/immutable/'] },
    },
    {
      name: 'libs-stand-alone',
      comment: 'Libraries are below the application: they never import src/ or projections/.',
      severity: 'error',
      from: { path: '^libs/' },
      to: { path: '^(src|projections)/' },
    },
    {
      name: 'projections-below-src',
      comment: 'Projections fold events into tables; the application uses them, never the other way.',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: '^src/' },
    },
    {
      name: 'no-deep-lib-imports',
      comment:
        'The application uses a library through its index (libs/<lib>/src/index.ts) and the projections through projections/index.ts, not their internals.',
      severity: 'error',
      from: { path: '^src/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^(libs/[^/]+/src/|projections/)', pathNot: '^(libs/[^/]+/src/index\\.ts|projections/index\\.ts)$' },
    },
    {
      name: 'contexts-through-index',
      comment: 'A context uses another context through its index.ts only (its Nest module and what it exports).',
      severity: 'error',
      from: { path: `^src/${CONTEXTS}/` },
      to: { path: `^src/${CONTEXTS}/`, pathNot: ['^src/$1/', `^src/${CONTEXTS}/index\\.ts$`] },
    },
    {
      name: 'shared-below-contexts',
      comment: 'platform/, http/ and config/ serve every context and know none of them.',
      severity: 'error',
      from: { path: `^src/${SHARED}/` },
      to: { path: [`^src/${CONTEXTS}/`, '^src/(app\\.module|main)\\.ts$', '^src/cli/'] },
    },
    {
      name: 'no-test-code-in-production',
      comment: 'Production code never imports test support (specs may).',
      severity: 'error',
      from: { path: '^(src|libs|projections)/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^test/' },
    },
    {
      name: 'no-circular',
      comment: 'No import cycles between files.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-cycles',
      comment: 'No import cycles between folders.',
      severity: 'error',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Specs may import anything (fakes in test/, internals they test); the rules are for the code they test.
    exclude: { path: ['^dist/', '\\.spec\\.ts$'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      extensions: ['.ts', '.js', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
