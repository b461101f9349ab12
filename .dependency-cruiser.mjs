// The layers of controller/, bottom up: a module imports only from its own layer or a layer below it, and no
// import cycle exists (type-only imports included). `npm run lint:layers` checks it; `npm test` runs that first.
// Why this order: what decides (api, reconciler) must never depend on what carries out (loops, adapters,
// start-up), so each rule stays a pure function that a test can call without a cluster or a process.
const LAYERS = [
  // Schemas, bounds and plain helpers: the vocabulary every other layer speaks, so they depend on nothing.
  { name: 'base', dirs: ['api', 'util'], files: ['version.ts'] },
  // Clients of the outside world (apiserver, forges, git, Prometheus): plain I/O, no policy.
  { name: 'adapters', dirs: ['kube', 'forge', 'metrics', 'git'] },
  // The pure rules: facts in, decisions out; they may use schemas and clients' types, never a loop.
  { name: 'reconciler', dirs: ['reconciler'] },
  // The one controller loop and its ports: it calls reconcile() and knows no mode.
  { name: 'core', dirs: ['core'] },
  // Each mode's implementations of the ports (and the ops appliers they share).
  { name: 'ports', dirs: ['sources', 'executors', 'sinks', 'ops'] },
  // Composition roots, the in-pod runner and the console: they wire the ports together.
  { name: 'roots', dirs: ['local', 'cluster', 'runner', 'console'] },
  // The command line: parses argv and calls a root.
  { name: 'cli', dirs: ['cli'] },
];

const layerPath = (layer) =>
  [...layer.dirs.map((dir) => `^controller/${dir}/`), ...(layer.files ?? []).map((f) => `^controller/${f}$`)].join('|');

const upwardRules = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `layer-${layer.name}-points-down`,
  comment: `${layer.dirs.join(', ')} may import only from ${LAYERS.slice(0, index + 1)
    .map((l) => l.name)
    .join(', ')}: an import from a higher layer makes a lower one depend on what it should not know`,
  severity: 'error',
  from: { path: layerPath(layer) },
  to: {
    path: LAYERS.slice(index + 1)
      .map(layerPath)
      .join('|'),
  },
}));

export default {
  forbidden: [
    ...upwardRules,
    {
      name: 'start-up-only',
      comment:
        'local/, cluster/ (composition roots) and runner/ (the in-pod entry point) are imported by nobody but the CLI: what they hold that others need belongs lower',
      severity: 'error',
      from: { path: '^controller/([^/]+)/', pathNot: '^controller/cli/' },
      to: { path: '^controller/(local|cluster|runner)/', pathNot: '^controller/$1/' },
    },
    {
      name: 'no-circular',
      comment: 'a cycle makes two modules one: neither can be read, tested or moved without the other',
      severity: 'error',
      from: { path: '^controller/' },
      to: { circular: true },
    },
    {
      name: 'controller-only-known-layers',
      comment: 'every directory of controller/ has a place in LAYERS above, so a new one cannot escape the rules',
      severity: 'error',
      from: {},
      to: {
        path: '^controller/',
        pathNot: LAYERS.map(layerPath).join('|'),
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    skipAnalysisNotInRules: true,
  },
};
