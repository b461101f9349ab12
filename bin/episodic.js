#!/usr/bin/env -S node --max-semi-space-size=8
// The small young generation keeps RSS down with many tasks (10,000 tasks: 238 MB peak with it, 347 MB without).
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import * as nodeModule from 'node:module';

// A namespace import, not `{ enableCompileCache }`: on an older Node a missing named export is a SyntaxError
// before any line here runs, and the user would see that instead of the message below.
if (Number(process.versions.node.split('.')[0]) < 22) {
  console.error(`episodic: needs Node.js 22 or newer; this is ${process.version}`);
  process.exit(2);
}
nodeModule.enableCompileCache?.();
import('../dist/cli/main.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
    console.error('episodic: not built yet; run `npm ci` (or `npm run build`) in the checkout first');
    process.exit(2);
  }
  throw err;
});
