#!/usr/bin/env -S node --max-semi-space-size=8
// The small young generation keeps RSS down with many tasks (10,000 tasks: 238 MB peak with it, 347 MB without).
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// This file must parse and run on any old Node: it only picks a new enough Node and hands over.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MIN_MAJOR = 22;
// Set in the Node we re-exec, so a project Node that is itself too old cannot loop.
const REEXEC_MARK = 'EPISODIC_LAUNCHER_REEXEC';

// A namespace import, not `{ enableCompileCache }`: on an older Node a missing named export is a SyntaxError
// before any line here runs, and the user would see that instead of the message below.
if (Number(process.versions.node.split('.')[0]) < MIN_MAJOR) {
  const projectNode = process.env[REEXEC_MARK] ? undefined : findProjectNode();
  if (projectNode) reexec(projectNode);
  else {
    console.error(
      `episodic: needs Node.js ${MIN_MAJOR} or newer; this is ${process.version} (${process.execPath}), and no ` +
        'node_modules/.bin/node of the project was found: run `npm ci` in the checkout, or install Node 22+',
    );
    process.exit(2);
  }
} else start();

function start() {
  nodeModule.enableCompileCache?.();
  if (process.env.npm_command === 'exec') watchParent({ grandparentToo: true });
  // Started by an old Node's launcher: if that launcher is killed, nobody else would stop us.
  else if (process.env[REEXEC_MARK]) watchParent({ grandparentToo: false });
  import('../dist/cli/main.js').catch((err) => {
    if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
      console.error('episodic: not built yet; run `npm ci` (or `npm run build`) in the checkout first');
      process.exit(2);
    }
    throw err;
  });
}

/**
 * The project's own Node (the `node` npm package puts it in node_modules/.bin): beside this package in a
 * checkout, or in any node_modules above it when episodic is installed as a dependency.
 */
function findProjectNode() {
  let dir = dirname(dirname(fileURLToPath(import.meta.url)));
  for (;;) {
    const candidate = join(dir, 'node_modules', '.bin', 'node');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Runs this file again under NODE with the same arguments and stdio, passing signals in and the ending out. */
function reexec(node) {
  // argv[1] as it was given (a node_modules/.bin link, say), so the CLI sees how it was started.
  const child = spawn(node, [...process.execArgv, process.argv[1], ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, [REEXEC_MARK]: String(process.pid) },
  });
  // A terminal's Ctrl-C reaches both of us; the child's handlers take a repeated signal as one.
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'];
  const forward = (signal) => {
    try {
      child.kill(signal);
    } catch {
      // the child is gone already; its exit is handled below
    }
  };
  for (const signal of signals) process.on(signal, forward);
  child.on('error', (err) => {
    console.error(`episodic: cannot start ${node}: ${err.message}`);
    process.exit(2);
  });
  child.on('exit', (code, signal) => {
    for (const s of signals) process.removeListener(s, forward);
    // Ends as the child did: the same exit code, or dying of the same signal (a shell sees 128+N either way).
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}

// `npx episodic …` (npm exec) runs this file under `sh -c`, and npm forwards SIGINT/SIGTERM only to that sh:
// sh catches SIGINT and waits for us (we never see it), and dies of SIGTERM without passing it on. Orphaned,
// the controller would run on with its agents. So under npm exec, when the sh above us or the npm above it
// goes away (npm forwarded a SIGTERM, or was killed, e.g. by `timeout -k`), that counts as the SIGINT it
// was meant to be, unless a signal already reached us (a terminal's Ctrl-C reaches the whole group). A
// SIGINT that sh swallows cannot be seen from here: scripts should run node_modules/.bin/episodic.
// Under a re-exec from an old Node only our own parent (that launcher) is watched.
function watchParent({ grandparentToo }) {
  const parent = process.ppid;
  const grandparent = grandparentToo ? parentOf(parent) : undefined;
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
