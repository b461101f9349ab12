// Git workspaces through the real runner against real repositories: a local bare repository (file://)
// and, for credentials, the same repository served by `git http-backend` behind HTTP basic auth.
import assert from 'node:assert/strict';
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { episodeConfig, nodeAgent, removeTempDirs, runRunner, tempDir } from './runner-harness.ts';
import { startGitHttpServer } from './git-http-server.ts';
import type { GitHttpServer } from './git-http-server.ts';
import { git } from '../support/git.ts';

/** A bare repository with one commit on main, plus its file:// URL. */
async function seededBareRepo(): Promise<{ bare: string; url: string }> {
  const root = await tempDir('git');
  const bare = path.join(root, 'origin.git');
  git(root, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  const seed = path.join(root, 'seed');
  git(root, 'clone', '--quiet', bare, seed);
  await writeFile(path.join(seed, 'README.md'), '# project\n');
  git(seed, 'add', '.');
  git(seed, '-c', 'user.name=seed', '-c', 'user.email=seed@example.com', 'commit', '--quiet', '-m', 'seed');
  git(seed, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
  return { bare, url: `file://${bare}` };
}

const log = (bare: string, ref = 'main') => git(bare, 'log', '--format=%s|%an <%ae>', ref).split('\n');

// Writes FILE with CONTENT and prints which of the given files already existed.
const writingAgent = (file: string, content: string, look: string[] = []) =>
  nodeAgent(`
    const fs = require('node:fs');
    console.log(JSON.stringify({ saw: ${JSON.stringify(look)}.filter((f) => fs.existsSync(f)) }));
    fs.writeFileSync(${JSON.stringify(file)}, ${JSON.stringify(content)});`);

describe('episodic episode with a git workspace', () => {
  after(removeTempDirs);

  it('clones, commits the episode and pushes; the next episode starts from that commit', async () => {
    const { bare, url } = await seededBareRepo();
    const first = await runRunner({
      agent: writingAgent('first.txt', 'one\n', ['README.md']),
      config: episodeConfig({ workspaceDir: await tempDir('ws'), git: { url, ref: 'main' } }),
      prompt: 'x',
    });
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.result?.errorClass, 'none', first.result?.message);
    assert.deepEqual(JSON.parse(first.stdout), { saw: ['README.md'] });
    assert.deepEqual(log(bare), [
      'episodic: demo episode 1 (continue)|episodic <episodic@localhost>',
      'seed|seed <seed@example.com>',
    ]);
    assert.equal(
      git(
        bare,
        'log',
        '-1',
        '--format=%(trailers:key=Episodic-Task,valueonly)%(trailers:key=Episodic-Episode,valueonly)',
        'main',
      ),
      'team-a/demo\n1',
    );
    // The checkpoint is the commit in the result's evidence (and so in the episode's record).
    assert.equal(first.result?.evidence?.workspace?.commit, git(bare, 'rev-parse', 'main'));
    assert.match(first.stderr, /checkpoint [0-9a-f]{12}/);

    // A fresh pod: a fresh emptyDir.
    const second = await runRunner({
      agent: writingAgent('second.txt', 'two\n', ['first.txt']),
      config: episodeConfig({ workspaceDir: await tempDir('ws'), episode: 2, git: { url, ref: 'main' } }),
      prompt: 'x',
    });
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(JSON.parse(second.stdout), { saw: ['first.txt'] });
    assert.deepEqual(
      log(bare)
        .slice(0, 2)
        .map((l) => l.split('|')[0]),
      ['episodic: demo episode 2 (continue)', 'episodic: demo episode 1 (continue)'],
    );
    assert.equal(git(bare, 'show', 'main:first.txt'), 'one');
    assert.equal(git(bare, 'show', 'main:second.txt'), 'two');
  });

  it('updates an existing clone, keeps commits the agent made itself, and skips empty commits', async () => {
    const { bare, url } = await seededBareRepo();
    const ws = await tempDir('ws');
    const config = episodeConfig({ workspaceDir: ws, git: { url, ref: 'main' } });
    assert.equal((await runRunner({ agent: writingAgent('a.txt', 'a'), config, prompt: 'x' })).code, 0);

    // Someone else pushes in between; the same workspace must pick that up (fetch + fast-forward).
    const other = await tempDir('other');
    git(other, 'clone', '--quiet', bare, '.');
    await writeFile(path.join(other, 'b.txt'), 'b');
    git(other, 'add', '.');
    git(other, '-c', 'user.name=human', '-c', 'user.email=h@example.com', 'commit', '--quiet', '-m', 'human');
    git(other, 'push', '--quiet', 'origin', 'HEAD:main');

    const agentCommits = nodeAgent(`
      const { execFileSync } = require('node:child_process');
      const fs = require('node:fs');
      console.log(JSON.stringify({ saw: ['b.txt'].filter((f) => fs.existsSync(f)) }));
      fs.writeFileSync('c.txt', 'c');
      execFileSync('git', ['add', 'c.txt']);
      execFileSync('git', ['-c', 'user.name=agent', '-c', 'user.email=agent@example.com', 'commit', '-qm', 'agent commit']);`);
    const run = await runRunner({ agent: agentCommits, config: { ...config, episode: 2 }, prompt: 'x' });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { saw: ['b.txt'] });
    assert.match(run.stderr, /updating the existing clone/);
    // Nothing left uncommitted: no checkpoint; the agent's own commit holds the episode's work.
    assert.doesNotMatch(run.stderr, /checkpoint failed/);
    assert.deepEqual(
      log(bare).map((l) => l.split('|')[0]),
      ['agent commit', 'human', 'episodic: demo episode 1 (continue)', 'seed'],
    );
    assert.equal(run.result?.evidence?.workspace?.commit, git(bare, 'rev-parse', 'main'));
  });

  it('creates a missing branch, and works with an empty repository', async () => {
    const { bare, url } = await seededBareRepo();
    const run = await runRunner({
      agent: writingAgent('feature.txt', 'f'),
      config: episodeConfig({ workspaceDir: await tempDir('ws'), git: { url, ref: 'refs/heads/episodic/feature' } }),
      prompt: 'x',
    });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(
      log(bare, 'episodic/feature').map((l) => l.split('|')[0]),
      ['episodic: demo episode 1 (continue)', 'seed'],
    );
    assert.deepEqual(log(bare), ['seed|seed <seed@example.com>'], 'main is untouched');

    const emptyRoot = await tempDir('git');
    git(emptyRoot, 'init', '--quiet', '--bare', 'empty.git');
    const fromEmpty = await runRunner({
      agent: writingAgent('hello.txt', 'hi'),
      config: episodeConfig({
        workspaceDir: await tempDir('ws'),
        git: { url: `file://${emptyRoot}/empty.git`, ref: 'main' },
      }),
      prompt: 'x',
    });
    assert.equal(fromEmpty.code, 0, fromEmpty.stderr);
    assert.equal(git(path.join(emptyRoot, 'empty.git'), 'show', 'main:hello.txt'), 'hi');
  });

  it('makes no checkpoint for an episode that changes nothing', async () => {
    const { bare, url } = await seededBareRepo();
    const run = await runRunner({
      agent: nodeAgent(`console.log('looked, changed nothing')`),
      config: episodeConfig({ workspaceDir: await tempDir('ws'), git: { url, ref: 'main' } }),
      prompt: 'x',
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.result?.evidence?.workspace?.changed, false);
    assert.equal(run.result?.evidence?.workspace?.commit, undefined);
    assert.deepEqual(log(bare), ['seed|seed <seed@example.com>']);
  });

  it('refuses a url git could read as an option or a remote-helper command, before running anything', async () => {
    for (const url of [
      '--upload-pack=touch /tmp/pwned',
      'ext::sh -c touch% /tmp/pwned',
      'fd::17',
      'gopher://host/repo',
    ]) {
      const run = await runRunner({
        agent: writingAgent('x.txt', 'x'),
        config: episodeConfig({ workspaceDir: await tempDir('ws'), git: { url, ref: 'main' } }),
        prompt: 'x',
      });
      assert.equal(run.result?.errorClass, 'fatal', url);
      assert.match(run.result?.message ?? '', /git\.url: /, url);
    }
    const badRef = await runRunner({
      agent: writingAgent('x.txt', 'x'),
      config: episodeConfig({ workspaceDir: await tempDir('ws'), git: { url: 'file:///nowhere', ref: '--orphan' } }),
      prompt: 'x',
    });
    assert.match(badRef.result?.message ?? '', /git\.ref: /);
  });

  it('turns a rejected push into a transient result (the agent exit code is kept)', async () => {
    const { bare, url } = await seededBareRepo();
    const hook = path.join(bare, 'hooks', 'pre-receive');
    await writeFile(hook, '#!/bin/sh\necho "pushes are frozen today" >&2\nexit 1\n');
    await chmod(hook, 0o755);
    const run = await runRunner({
      agent: writingAgent('x.txt', 'x'),
      config: episodeConfig({ workspaceDir: await tempDir('ws'), git: { url, ref: 'main' } }),
      prompt: 'x',
    });
    assert.equal(run.code, 0);
    assert.equal(run.result?.errorClass, 'transient');
    assert.match(run.result?.message ?? '', /^git push failed: .*pushes are frozen today/);
    assert.deepEqual(log(bare), ['seed|seed <seed@example.com>']);
  });

  it('reports a repository that does not exist as fatal, before running the agent', async () => {
    const root = await tempDir('git');
    const run = await runRunner({
      agent: writingAgent('x.txt', 'x'),
      config: episodeConfig({
        workspaceDir: await tempDir('ws'),
        git: { url: `file://${root}/missing.git`, ref: 'main' },
      }),
      prompt: 'x',
    });
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '', 'the agent must not run');
    assert.equal(run.result?.errorClass, 'fatal');
    assert.match(run.result?.message ?? '', /^git workspace setup failed: .*does not appear to be a git repository/);
  });

  it('reports an unreachable git host as transient, without the credentials in the URL', async () => {
    const run = await runRunner({
      agent: writingAgent('x.txt', 'x'),
      config: episodeConfig({
        workspaceDir: await tempDir('ws'),
        git: { url: 'http://robot:pw-81c2e@127.0.0.1:9/repo.git', ref: 'main' },
      }),
      prompt: 'x',
    });
    assert.equal(run.code, 1);
    assert.equal(run.result?.errorClass, 'transient', run.result?.message);
    assert.match(run.result?.message ?? '', /^git workspace setup failed: .*127\.0\.0\.1/);
    assert.doesNotMatch(run.stdout + run.stderr + run.terminationMessage, /pw-81c2e/);
  });

  describe('over HTTP with credentials', () => {
    let server: GitHttpServer;
    let bare: string;
    before(async () => {
      ({ bare } = await seededBareRepo());
      server = await startGitHttpServer({ root: path.dirname(bare), username: 'robot', password: 'tok-3f9a7c' });
    });
    after(() => server?.close());

    it('authenticates with GIT_TOKEN/GIT_USERNAME from the secret and never prints them', async () => {
      const run = await runRunner({
        agent: writingAgent('http.txt', 'h'),
        config: episodeConfig({
          workspaceDir: await tempDir('ws'),
          git: { url: `${server.url}/origin.git`, ref: 'main' },
        }),
        prompt: 'x',
        env: { GIT_TOKEN: 'tok-3f9a7c', GIT_USERNAME: 'robot' },
      });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.result?.errorClass, 'none', run.result?.message);
      assert.equal(git(bare, 'show', 'main:http.txt'), 'h');
      assert.doesNotMatch(run.stdout + run.stderr + run.terminationMessage, /tok-3f9a7c/);
    });

    it('moves credentials out of the URL and redacts them; wrong ones are fatal', async () => {
      const ws = await tempDir('ws');
      const good = await runRunner({
        agent: writingAgent('url.txt', 'u'),
        config: episodeConfig({
          workspaceDir: ws,
          git: { url: `${server.url.replace('//', '//robot:tok-3f9a7c@')}/origin.git`, ref: 'main' },
        }),
        prompt: 'x',
      });
      assert.equal(good.code, 0, good.stderr);
      assert.doesNotMatch(good.stdout + good.stderr + good.terminationMessage, /tok-3f9a7c/);
      assert.doesNotMatch(git(ws, 'remote', 'get-url', 'origin'), /tok-3f9a7c/, 'the agent can read .git/config');

      const bad = await runRunner({
        agent: writingAgent('x.txt', 'x'),
        config: episodeConfig({
          workspaceDir: await tempDir('ws'),
          git: { url: `${server.url}/origin.git`, ref: 'main' },
        }),
        prompt: 'x',
        env: { GIT_TOKEN: 'wrong-token-123' },
      });
      assert.equal(bad.code, 1);
      assert.equal(bad.result?.errorClass, 'fatal', bad.result?.message);
      assert.doesNotMatch(bad.stdout + bad.stderr + bad.terminationMessage, /wrong-token-123/);
    });
  });
});
