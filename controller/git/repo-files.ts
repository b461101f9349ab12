// What a repository keeps in plain files, read without starting git (a git process costs 5–50 ms on a large
// work tree, and an episode's evidence asks for HEAD three times): HEAD's commit and whether the
// repository's own config names a committer. Anything unusual (a reftable, a symbolic ref chain, an odd ref
// name, an unreadable file) answers 'unknown' and the caller asks git instead.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';

export type Known<T> = T | 'unknown';

// git's empty tree, the base of a repository without a commit yet, per object format.
const EMPTY_TREE_SHA1 = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const EMPTY_TREE_SHA256 = '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321';
const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
// Branch names this reader resolves itself; git answers for anything else.
const PLAIN_REF = /^refs\/(?:[A-Za-z0-9_.-]+\/)*[A-Za-z0-9_.-]+$/;

/** The empty tree in the object format of `like` (a commit id of the same repository), sha1 without one. */
export function emptyTree(like?: string): string {
  return like?.length === 64 ? EMPTY_TREE_SHA256 : EMPTY_TREE_SHA1;
}

interface GitDirs {
  /** HEAD lives here (a linked worktree has its own). */
  gitDir: string;
  /** refs, packed-refs and config live here. */
  commonDir: string;
}

function gitDirs(workTree: string): GitDirs | undefined {
  const dotGit = join(workTree, '.git');
  let gitDir = dotGit;
  if (!statSync(dotGit).isDirectory()) {
    const pointer = /^gitdir: (.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
    if (!pointer) return undefined;
    gitDir = isAbsolute(pointer) ? pointer : resolve(workTree, pointer);
  }
  const common = existsSync(join(gitDir, 'commondir'))
    ? readFileSync(join(gitDir, 'commondir'), 'utf8').trim()
    : undefined;
  const commonDir = common ? (isAbsolute(common) ? common : resolve(gitDir, common)) : gitDir;
  return { gitDir, commonDir };
}

/** HEAD's commit, undefined on an unborn branch (a new repository). */
export function readHead(workTree: string): Known<string | undefined> {
  try {
    const dirs = gitDirs(workTree);
    if (!dirs || existsSync(join(dirs.commonDir, 'reftable'))) return 'unknown';
    const head = readFileSync(join(dirs.gitDir, 'HEAD'), 'utf8').trim();
    if (OBJECT_ID.test(head)) return head; // detached
    const ref = /^ref: (.+)$/.exec(head)?.[1];
    if (!ref || !PLAIN_REF.test(ref) || ref.split('/').includes('..')) return 'unknown';
    const loose = join(dirs.commonDir, ref);
    if (existsSync(loose)) {
      const id = readFileSync(loose, 'utf8').trim();
      return OBJECT_ID.test(id) ? id : 'unknown';
    }
    return packedRef(dirs.commonDir, ref);
  } catch {
    return 'unknown';
  }
}

function packedRef(commonDir: string, ref: string): Known<string | undefined> {
  const file = join(commonDir, 'packed-refs');
  if (!existsSync(file)) return undefined;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [id, name] = line.split(' ');
    if (name === ref) return OBJECT_ID.test(id) ? id : 'unknown';
  }
  return undefined; // no such branch yet: unborn
}

/**
 * Whether the repository's own config file sets user.email: what `git config --local --get user.email`
 * answers (that reads the one file, includes not followed).
 */
export function localIdentityConfigured(workTree: string): Known<boolean> {
  try {
    const dirs = gitDirs(workTree);
    if (!dirs) return 'unknown';
    return configSetsUserEmail(readFileSync(join(dirs.commonDir, 'config'), 'utf8'));
  } catch {
    return 'unknown';
  }
}

const SECTION = /^\[([A-Za-z0-9.-]+)(\s+"(?:[^"\\]|\\.)*")?\]\s*(.*)$/;
const KEY = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$|[#;])/;
// A value goes on on the next line after an odd number of trailing backslashes.
const CONTINUED = /(?:^|[^\\])(?:\\\\)*\\$/;

/** A git config file's text: is `email` set in a `[user]` section? 'unknown' for a line it cannot read. */
export function configSetsUserEmail(text: string): Known<boolean> {
  let section = '';
  let continued = false;
  for (const raw of text.split('\n')) {
    let line = raw.trim();
    if (continued) {
      continued = CONTINUED.test(line);
      continue;
    }
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[')) {
      const header = SECTION.exec(line);
      if (!header) return 'unknown';
      section = header[2] ? `${header[1].toLowerCase()} "sub"` : header[1].toLowerCase();
      line = header[3];
      if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    }
    const key = KEY.exec(line);
    if (!key) return 'unknown';
    if (section === 'user' && key[1].toLowerCase() === 'email') return true;
    continued = CONTINUED.test(line);
  }
  return false;
}
