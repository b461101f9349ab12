#!/usr/bin/env -S node --max-semi-space-size=8
// The small young generation keeps RSS (and with it the cost of fork() per episode) down with many tasks.
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
