// Shared setup of the local Gitea trigger tests that run `episodic run --watch` against the real Gitea: the
// episodes' git credentials (a global git config with the bot's header), a stand-in agent that changes a
// file, the AgentTrigger document, and the watching controller with a failure explainer.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Gitea } from './gitea.ts';
import { cliEntry } from './cli-entry.ts';
import { FAKE_CLAUDE, NODE } from './local.ts';

/** The environment of a local run: the trigger's token and a git config that pushes as `owner`. */
export function triggerRunEnv(dir: string, gitea: Gitea, owner: string): Record<string, string> {
  const gitConfig = join(dir, 'gitconfig');
  const basic = Buffer.from(`${owner}:${gitea.adminToken}`).toString('base64');
  writeFileSync(
    gitConfig,
    `[http]\n\textraHeader = Authorization: Basic ${basic}\n[user]\n\tname = Test\n\temail = test@example.invalid\n`,
  );
  return { TEST_GITEA_TOKEN: gitea.adminToken, GIT_CONFIG_GLOBAL: gitConfig };
}

export interface PublishTrigger {
  name: string;
  gitea: Gitea;
  owner: string;
  repo: string;
  kind?: 'issues' | 'pullRequests';
  /** The files the stand-in agent writes (slow enough to be seen Running): the work that gets pushed. */
  writeFiles: Record<string, string>;
  /** A `source.webhook` (deliveries signed with this variable's secret) instead of a polled `source.gitea`. */
  webhookSecretEnv?: string;
  /** The forge's API as the controller reaches it (a proxy in front of Gitea); gitea.url by default. */
  apiURL?: string;
  /** More of the template's spec, as YAML lines indented 6 spaces (e.g. `integrate: {...}`). */
  templateSpec?: string;
  /** How long the stand-in agent runs (2.5 s: long enough to be seen Running). */
  delayMs?: number;
  /** The PRs' base (report.pullRequest.base) and the template's git ref (main; replaced per item anyway). */
  prBase?: string;
  templateRef?: string;
}

function sourceYaml(t: PublishTrigger): string {
  const forge = `apiURL: ${t.apiURL ?? t.gitea.url}
      repo: ${t.owner}/${t.repo}
      labels: [agent]
      tokenEnv: TEST_GITEA_TOKEN`;
  if (t.webhookSecretEnv) return `webhook:\n      forge: gitea\n      secretEnv: ${t.webhookSecretEnv}\n      ${forge}`;
  return `gitea:\n      ${forge}\n      kind: ${t.kind ?? 'issues'}\n      pollSeconds: 3600`;
}

/** Writes the stand-in agent's script and the trigger (label `agent`, a report with comment, labels and PR). */
export function writePublishTrigger(dir: string, t: PublishTrigger): void {
  const script = join(dir, `${t.name}-agent.json`);
  writeFileSync(
    script,
    JSON.stringify({ default: { mode: 'success', delayMs: t.delayMs ?? 2500, writeFiles: t.writeFiles } }),
  );
  writeFileSync(
    join(dir, `${t.name}.yaml`),
    `apiVersion: episodic.dev/v1alpha1
kind: AgentTrigger
metadata:
  name: ${t.name}
spec:
  source:
    ${sourceYaml(t)}
  report:
    comment: true
    labels: {running: 'episodic:running', done: 'episodic:done'}
    pullRequest: {titleTemplate: 'episodic: {{item.title}}'${t.prBase ? `, base: ${t.prBase}` : ''}}
  template:
    spec:
      prompt: 'Fix #{{item.number}} <promise>COMPLETE</promise>'
      workspace: {git: {url: '${t.gitea.cloneUrl(t.owner, t.repo)}', ref: ${t.templateRef ?? 'main'}}}
      agent:
        command: [${JSON.stringify(NODE)}, ${JSON.stringify(FAKE_CLAUDE)}, ${JSON.stringify(`--fake-script=${script}`)}]
        output: claude
      limits: {maxEpisodes: 2, episodeTimeoutSeconds: 60}
${t.templateSpec ?? ''}`,
  );
}

export interface WatchingRun {
  child: ChildProcess;
  /** Rethrows a wait's error with the trigger's status file and the controller's stderr tail. */
  explain: (err: unknown) => never;
  /** The controller's log so far. */
  stderr: () => string;
  stop: () => Promise<void>;
}

/** `episodic run DIR --watch` in the background (more arguments after those). */
export function watchRun(
  dir: string,
  env: Record<string, string>,
  statusFile: string,
  args: string[] = [],
): WatchingRun {
  const child = spawn(NODE, [cliEntry(), 'run', dir, '--watch', '--no-table', '--log-format', 'json', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise((r) => child.on('exit', r));
  const explain = (err: unknown): never => {
    const status = existsSync(statusFile) ? readFileSync(statusFile, 'utf8') : '(no status)';
    throw new Error(`${(err as Error).message}\n${status}\n${stderr.slice(-3000)}`);
  };
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  return { child, explain, stderr: () => stderr, stop };
}
