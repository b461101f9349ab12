#!/usr/bin/env -S node --max-semi-space-size=8
// The small young generation keeps RSS down with many tasks (10,000 tasks: 238 MB peak with it, 347 MB without).
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
import { readFileSync } from 'node:fs';
import * as nodeModule from 'node:module';

// A namespace import, not `{ enableCompileCache }`: on an older Node a missing named export is a SyntaxError
// before any line here runs, and the user would see that instead of the message below.
if (Number(process.versions.node.split('.')[0]) < 22) {
  console.error(`episodic: needs Node.js 22 or newer; this is ${process.version}`);
  process.exit(2);
}
nodeModule.enableCompileCache?.();
if (process.env.npm_command === 'exec') watchNpmExecParent();
import('../dist/cli/main.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
    console.error('episodic: not built yet; run `npm ci` (or `npm run build`) in the checkout first');
    process.exit(2);
  }
  throw err;
});

// `npx episodic …` (npm exec) runs this file under `sh -c`, and npm forwards SIGINT/SIGTERM only to that sh:
// sh catches SIGINT and waits for us (we never see it), and dies of SIGTERM without passing it on. Orphaned,
// the controller would run on with its agents. So under npm exec, when the sh above us or the npm above it
// goes away (npm forwarded a SIGTERM, or was killed, e.g. by `timeout -k`), that counts as the SIGINT it
// was meant to be, unless a signal already reached us (a terminal's Ctrl-C reaches the whole group). A
// SIGINT that sh swallows cannot be seen from here: scripts should run node_modules/.bin/episodic.
function watchNpmExecParent() {
  const parent = process.ppid;
  const grandparent = parentOf(parent);
  let signalled = false;
  const note = (signal) => {
    signalled = true;
    // A command without handlers of its own keeps Node's default: dying of the signal.
    if (process.listenerCount(signal) === 1) {
      process.removeListener(signal, note);
      process.kill(process.pid, signal);
    }
  };
  process.on('SIGINT', note);
  process.on('SIGTERM', note);
  const timer = setInterval(() => {
    const orphaned = process.ppid !== parent || (grandparent !== undefined && parentOf(parent) !== grandparent);
    if (!orphaned) return;
    clearInterval(timer);
    if (!signalled) process.kill(process.pid, 'SIGINT');
  }, 200);
  timer.unref();
}

/** The parent of a process (Linux /proc); undefined when it cannot be read (gone, or not Linux). */
function parentOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}
