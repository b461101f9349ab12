// How the tests start episodic: bin/episodic.js on dist/, as `npm ci` installs it and the image runs it. The
// compiled bundle starts with less CPU than the sources through type stripping (every test spawns the CLI
// many times), and a test of a dist/ older than the sources would pass on stale code: that fails loudly here.
import { join, resolve } from 'node:path';
import { distIsFresh } from '../../scripts/build-stamp.mjs';

const REPO = resolve(import.meta.dirname, '../..');
const ENTRY = join(REPO, 'bin', 'episodic.js');
let checked = false;

/** bin/episodic.js, once dist/ is known to be built from the sources of this checkout. */
export function cliEntry(): string {
  if (!checked && !distIsFresh(REPO))
    throw new Error(
      'dist/ is not built from these sources: run `npm run -s build` before the tests that start episodic',
    );
  checked = true;
  return ENTRY;
}
