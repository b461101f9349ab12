// A checkout's own `node_modules/.bin/episodic` (npm links the bins of dependencies, never the project's own),
// so `node_modules/.bin/episodic` is the one invocation that works in a checkout, an npm install and the image.
// Run by the `prepare` script after the build; idempotent.
import { existsSync, lstatSync, mkdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../', import.meta.url));
const binDir = join(repo, 'node_modules', '.bin');
const link = join(binDir, 'episodic');
const target = '../../bin/episodic.js';

const modules = join(repo, 'node_modules');
// Installed as a dependency (a git install runs prepare too), npm links the bin itself; a node_modules shared
// from another checkout by symlink would get a link into that checkout's bin/.
const installed = basename(dirname(repo.replace(/\/$/, ''))) === 'node_modules';
if (installed || !existsSync(modules) || lstatSync(modules).isSymbolicLink()) process.exit(0);
mkdirSync(binDir, { recursive: true });
const current = lstatSync(link, { throwIfNoEntry: false });
if (current?.isSymbolicLink() && readlinkSync(link) === target) process.exit(0);
if (current) rmSync(link, { force: true });
symlinkSync(target, link);
console.log(`linked ${link} -> ${target}`);
