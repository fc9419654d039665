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
      name: 'control-plane-through-its-surface',
      severity: 'error',
      comment: 'Outside code imports src/control-plane/index.ts only: the other files there are the control plane\'s insides.',
      from: { path: '^(src|projections)/', pathNot: '^src/control-plane/' },
      to: { path: '^src/control-plane/', pathNot: '^src/control-plane/index\\.ts$' },
    },
    {
      name: 'command-backlog-through-its-surface',
      severity: 'error',
      comment: 'Outside code imports src/command-backlog/index.ts only: the other files there are the backlog\'s insides.',
      from: { path: '^(src|projections)/', pathNot: '^src/command-backlog/' },
      to: { path: '^src/command-backlog/', pathNot: '^src/command-backlog/index\\.ts$' },
    },
    {
      name: 'ledger-knows-no-callers',
      severity: 'error',
      comment: 'The ledger is the core the other parts write to and read from: it imports governance types and db, nothing that uses it.',
      from: { path: '^src/ledger/' },
      to: { path: '^(projections|src/(api|control-plane|command-backlog|doors|http-server|metrics))/' },
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
