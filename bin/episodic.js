#!/usr/bin/env -S node --max-semi-space-size=8
// The small young generation keeps RSS down with many tasks (10,000 tasks: 238 MB peak with it, 347 MB without).
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import { enableCompileCache } from 'node:module';

enableCompileCache?.();
import('../dist/cli/main.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
    console.error('episodic: not built yet; run `npm ci` (or `npm run build`) in the checkout first');
    process.exit(2);
  }
  throw err;
});
