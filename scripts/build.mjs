import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { CONSOLE_SCRIPTS, distIsFresh, readStamp, sourceHash, WEB_BUILD } from './build-stamp.mjs';

const repo = fileURLToPath(new URL('../', import.meta.url)); // not .pathname: percent-encoded (a path with a space)
const dist = join(repo, 'dist');
const cli = join(dist, 'cli');
const stampFile = join(dist, '.build-stamp');
const ENTRY = 'main.js';

const sources = sourceHash(repo);
const stamp = readStamp(dist);
if (process.argv.includes('--if-stale') && distIsFresh(repo, sources)) {
  console.log('dist/ is up to date with the sources (npm run build rebuilds it anyway)');
  process.exit(0);
}

const staging = join(repo, `dist.build-${process.pid}`);
rmSync(staging, { recursive: true, force: true });
try {
  await build({
    absWorkingDir: repo,
    entryPoints: ['controller/cli/main.ts'],
    outdir: staging,
    bundle: true,
    // Every lazy import() becomes its own chunk: `episodic get` still loads nothing of `run` or `controller`.
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    sourcemap: true,
    logLevel: 'warning',
    // Left to node_modules: client-node (only `episodic controller` loads it; large, and tested unbundled)
    // and pino (its transports load worker files by path).
    external: ['@kubernetes/client-node', 'pino'],
    // Bundled CommonJS packages call require() for Node built-ins; ESM output has no require of its own.
    banner: {
      js: "import { createRequire as __episodicRequire } from 'node:module'; const require = __episodicRequire(import.meta.url);",
    },
  });
  // The console's scripts (controller/console/web) for the browser, no CDN: the page and uPlot on its own.
  for (const [entry, name] of CONSOLE_SCRIPTS)
    await build({
      ...WEB_BUILD,
      absWorkingDir: repo,
      entryPoints: [`controller/console/web/${entry}`],
      outfile: join(staging, 'console', name),
    });
  // The sandbox's relay (controller/executors/sandbox/relay.ts): started by path inside a sandbox, node built-ins only.
  await build({
    absWorkingDir: repo,
    entryPoints: ['controller/executors/sandbox/relay.ts'],
    outfile: join(dist, 'sandbox-relay.js'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    logLevel: 'warning',
  });
  mkdirSync(join(dist, 'console'), { recursive: true });
  for (const [, name] of CONSOLE_SCRIPTS) renameSync(join(staging, 'console', name), join(dist, 'console', name));
  rmSync(join(staging, 'console'), { recursive: true });
  const files = readdirSync(staging);
  if (!files.includes(ENTRY)) throw new Error(`esbuild wrote no ${ENTRY}`);
  mkdirSync(cli, { recursive: true });
  // Hashed names first (new beside old), the entry's map, then the entry itself: one rename, atomic.
  const last = [`${ENTRY}.map`, ENTRY];
  for (const f of [...files.filter((f) => !last.includes(f)), ...last.filter((f) => files.includes(f))])
    renameSync(join(staging, f), join(cli, f));
  // Keep the previous build's files (a process that started on it may still load a lazy chunk); drop older ones.
  const keep = new Set([...files, ...(stamp?.files ?? [])]);
  for (const f of readdirSync(cli)) if (!keep.has(f)) rmSync(join(cli, f), { force: true });
  writeFileSync(`${stampFile}.tmp`, `${JSON.stringify({ sources, files }, null, 2)}\n`);
  renameSync(`${stampFile}.tmp`, stampFile);
} finally {
  rmSync(staging, { recursive: true, force: true });
}
