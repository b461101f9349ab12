// The layers of controller/ (README "Layers"), bottom up: a module imports only from its own layer or one below
// it, and no import cycle exists, type-only imports included. `npm run lint:layers` checks it; `npm test` runs it.
// Why: what decides (api, reconciler) never depends on what carries it out (loops, clients, start-up), so each
// rule stays a pure function a test can call without a cluster, a forge or a process.
const LAYERS = [
  // Schemas, bounds, wire formats and plain helpers: the vocabulary every layer speaks, so it depends on none.
  { name: 'base', dirs: ['api', 'util'], files: ['version.ts'] },
  // Clients of the outside world (apiserver, forges, git, Prometheus): plain I/O, no policy.
  { name: 'clients', dirs: ['kube', 'forge', 'metrics', 'git'] },
  // The pure rules: facts in, decisions out; schemas and clients' types only, never a loop.
  { name: 'reconciler', dirs: ['reconciler'] },
  // The model gateway: a proxy that carries out the pure spend rule request by request; no loop, no mode.
  { name: 'gateway', dirs: ['gateway'] },
  // The one controller loop and its ports: it calls reconcile() and knows no mode.
  { name: 'core', dirs: ['core'] },
  // Each mode's implementations of the ports, and the op appliers they share.
  { name: 'ports', dirs: ['sources', 'executors', 'sinks', 'ops'] },
  // Composition roots (local/, cluster/), the in-pod runner and the console: they wire the ports together.
  { name: 'roots', dirs: ['local', 'cluster', 'runner', 'console'] },
  // The command line: parses argv and calls a root.
  { name: 'cli', dirs: ['cli'] },
];

const layerPath = (layer) => [
  ...layer.dirs.map((dir) => `^controller/${dir}/`),
  ...(layer.files ?? []).map((file) => `^controller/${file.replaceAll('.', '\\.')}$`),
];

const upwardRules = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `${layer.name}-points-down`,
  comment: `${layer.dirs.join(', ')} import only from ${LAYERS.slice(0, index + 1)
    .map((l) => l.name)
    .join(', ')}: a lower layer must not depend on what is built on it`,
  severity: 'error',
  from: { path: layerPath(layer) },
  to: { path: LAYERS.slice(index + 1).flatMap(layerPath) },
}));

export default {
  forbidden: [
    ...upwardRules,
    {
      name: 'start-up-only',
      comment:
        'local/ and cluster/ (composition roots) and runner/ (the in-pod entry point) are imported by the CLI alone: what others need of them belongs lower',
      severity: 'error',
      from: { path: '^controller/([^/]+)/', pathNot: '^controller/cli/' },
      to: { path: '^controller/(local|cluster|runner)/', pathNot: '^controller/$1/' },
    },
    {
      name: 'no-circular',
      comment: 'a cycle makes its modules one: none of them can be read, tested or moved without the others',
      severity: 'error',
      from: { path: '^controller/' },
      to: { circular: true },
    },
    {
      name: 'every-dir-has-a-layer',
      comment: 'each directory of controller/ is in LAYERS, so a new one cannot slip past the rules',
      severity: 'error',
      from: { path: '^controller/' },
      to: { path: '^controller/', pathNot: LAYERS.flatMap(layerPath) },
    },
    {
      name: 'every-dir-has-a-layer-from',
      comment: 'each directory of controller/ is in LAYERS: a module outside them imports nothing unchecked',
      severity: 'error',
      from: { path: '^controller/', pathNot: LAYERS.flatMap(layerPath) },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    skipAnalysisNotInRules: true,
  },
};
