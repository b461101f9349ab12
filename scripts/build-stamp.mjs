// What scripts/build.mjs reads and the stamp it leaves in dist/: one home for the build and for the tests that
// run the built CLI (they must not run a dist/ older than the sources they are meant to test).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The build's outputs a run needs: the CLI entry, the console's page script and charts, the sandbox relay. */
export const BUILT = ['cli/main.js', 'console/app.js', 'console/uplot.js', 'sandbox-relay.js'];

/** The console's browser scripts: controller/console/web/ENTRY → dist/console/NAME (uPlot on its own, loaded
 * only when a chart is drawn). */
export const CONSOLE_SCRIPTS = [
  ['app.ts', 'app.js'],
  ['uplot-entry.ts', 'uplot.js'],
];

/** esbuild's options for those scripts, in dist/ and when a checkout builds them in memory (console/assets.ts).
 * Minified: the browser parses less before the first render. */
export const WEB_BUILD = {
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  logLevel: 'warning',
};

/** A hash of what the build reads: the sources, the build script and the locked dependencies. */
export function sourceHash(repo) {
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
  for (const f of ['scripts/build.mjs', 'scripts/build-stamp.mjs', 'package-lock.json'])
    if (existsSync(join(repo, f))) add(join(repo, f));
  return hash.digest('hex');
}

/** dist/.build-stamp: the source hash it was built from and the files it wrote; undefined when unreadable. */
export function readStamp(dist) {
  try {
    const value = JSON.parse(readFileSync(join(dist, '.build-stamp'), 'utf8'));
    return typeof value?.sources === 'string' && Array.isArray(value.files) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Whether dist/ holds a build of exactly these sources. */
export function distIsFresh(repo, sources = sourceHash(repo)) {
  const dist = join(repo, 'dist');
  return readStamp(dist)?.sources === sources && BUILT.every((f) => existsSync(join(dist, f)));
}
