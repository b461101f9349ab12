// Builds dist/: the CLI bundled by esbuild (one file per lazily loaded part) instead of one output file per
// source module. Node resolves and loads ~300 small modules at every start otherwise (zod alone is 99 files);
// bundled, a one-episode `episodic run` takes ~60 ms less and `episodic get` ~50 ms less (see the commit).
// Type checking stays with tsc (`npm test` runs `tsc --noEmit`); esbuild only strips types.
//
// Atomic for whoever starts episodic meanwhile: the build goes to a directory beside dist/, every file but
// main.js has a content hash in its name, so they move in beside the old ones, and main.js is renamed over
// the old one last: a starting process loads the old build or the new one, whole. Files of the build
// before the previous one are removed.
//
// `--if-stale` (the `prepare` script, which npm runs on `npm ci`/`npm install` and also on `npx episodic` in a
// checkout): nothing to do when dist/ was built from these very sources (a hash of them in dist/.build-stamp).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repo = fileURLToPath(new URL('../', import.meta.url)); // not .pathname: percent-encoded (a path with a space)
const dist = join(repo, 'dist');
const cli = join(dist, 'cli');
const stampFile = join(dist, '.build-stamp');
const ENTRY = 'main.js';

const sources = sourceHash();
const stamp = readStamp();
const built = [join(cli, ENTRY), join(dist, 'sandbox-relay.js')];
if (process.argv.includes('--if-stale') && stamp?.sources === sources && built.every((f) => existsSync(f))) {
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
  // The console's page script (controller/console/web): for the browser, one file, no CDN (dist/console/app.js).
  await build({
    absWorkingDir: repo,
    entryPoints: ['controller/console/web/app.ts'],
    outfile: join(staging, 'console', 'app.js'),
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'warning',
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
  nativeRelay();
  mkdirSync(join(dist, 'console'), { recursive: true });
  renameSync(join(staging, 'console', 'app.js'), join(dist, 'console', 'app.js'));
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

/** dist/sandbox-relay, relay.ts's native twin (no Node start-up per sandboxed episode), where a C compiler is. */
function nativeRelay() {
  const out = join(staging, 'sandbox-relay');
  const cc = spawnSync('cc', ['-O2', '-o', out, join(repo, 'controller/executors/sandbox/relay.c')], { stdio: 'pipe' });
  if (cc.status === 0) return renameSync(out, join(dist, 'sandbox-relay'));
  rmSync(join(dist, 'sandbox-relay'), { force: true }); // never a stale one: the Node relay is used instead
  console.warn(
    `no native sandbox relay (cc: ${cc.error?.message ?? String(cc.stderr).trim().slice(0, 200)}); the Node one is used`,
  );
}

/** What the build reads: the sources, this script and the locked dependencies. */
function sourceHash() {
  const hash = createHash('sha256');
  const add = (file) =>
    hash
      .update(`${relative(repo, file)}\0`)
      .update(readFileSync(file))
      .update('\0');
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else add(path);
    }
  };
  walk(join(repo, 'controller'));
  for (const f of ['scripts/build.mjs', 'package-lock.json']) if (existsSync(join(repo, f))) add(join(repo, f));
  return hash.digest('hex');
}

function readStamp() {
  try {
    const value = JSON.parse(readFileSync(stampFile, 'utf8'));
    return typeof value?.sources === 'string' && Array.isArray(value.files) ? value : undefined;
  } catch {
    return undefined;
  }
}
