// The dependency rules of docs/architecture.md, checked in `npm test` (npm run deps).
/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'A cycle makes two parts one: neither can be read, tested or changed alone.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'governance-stands-alone',
      severity: 'error',
      comment: 'src/governance is the library every enforcement point links: it imports nothing of ours outside itself.',
      from: { path: '^src/governance/' },
      to: { path: '^(src|projections)/', pathNot: '^src/governance/' },
    },
    {
      name: 'governance-through-its-surface',
      severity: 'error',
      comment: 'Outside code imports src/governance/index.ts only: the other files there are the library\'s insides.',
      from: { path: '^(src|projections)/', pathNot: '^src/governance/' },
      to: { path: '^src/governance/', pathNot: '^src/governance/index\\.ts$' },
    },
    {
      name: 'parts-through-their-surfaces',
      severity: 'error',
      comment:
        'Outside code imports the ledger, metrics, the control plane, the command backlog, the console and auth through their index.ts only. ' +
        'src/cli.ts is exempt: each of its commands loads only the files it needs, when it runs.',
      from: { path: '^(src/[^/]+|projections)(/|[.]ts$)', pathNot: '^src/cli[.]ts$' },
      to: {
        path: '^src/(ledger|metrics|control-plane|command-backlog|console|auth)/',
        pathNot: ['^$1/', '^src/(ledger|metrics|control-plane|command-backlog|console|auth)/index[.]ts$'],
      },
    },
    {
      name: 'ledger-knows-no-callers',
      severity: 'error',
      comment: 'The ledger is the core the other parts write to and read from: it imports governance types and db, nothing that uses it.',
      from: { path: '^src/ledger/' },
      to: { path: '^(projections|src/(api|control-plane|command-backlog|doors|http-server|metrics))/' },
    },
    {
      name: 'auth-knows-no-callers',
      severity: 'error',
      comment: 'src/auth (bearer tokens, ingest keys) is what api and doors share: it imports db, config and the control plane\'s types, nothing that uses it.',
      from: { path: '^src/auth/' },
      to: { path: '^(projections|src/(api|doors|http-server|ledger|metrics|command-backlog|console))/' },
    },
    {
      name: 'api-and-doors-apart',
      severity: 'error',
      comment: 'The API and the doors share tokens and ingest keys through src/auth, never through each other.',
      from: { path: '^src/(api|doors)/' },
      to: { path: '^src/(api|doors)/', pathNot: '^src/$1/' },
    },
    {
      name: 'read-models-after-the-control-plane',
      severity: 'error',
      comment: 'Projections fold control-plane events (they import its view); the control plane does not import them.',
      from: { path: '^src/control-plane/' },
      to: { path: '^projections/' },
    },
    {
      name: 'doors-apart',
      severity: 'error',
      comment: 'A door imports the pipeline, never another door; the pipeline imports no door. openapi/ is no door: it describes the HTTP doors.',
      from: { path: '^src/doors/([^/]+)/', pathNot: '^src/doors/openapi/' },
      to: { path: '^src/doors/', pathNot: ['^src/doors/$1/', '^src/doors/pipeline/'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(node_modules|dist)/' },
  },
};
