// {{bb.KEY}}, {{children}} and {{messages}} in a promptFile on a cluster: the pod the controller builds carries
// the rendered values (EPISODIC_PROMPT_VARS, bounded), and the real runner renders the workspace's file with them
// in one pass: a value that itself says {{task}} stays as written; a blackboard key past the bound renders empty
// with a note in the result; a corrupt EPISODIC_PROMPT_VARS is a configuration error.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { AgentTaskSpecSchema } from '../../controller/api/agent-task.ts';
import { EPISODE_CONFIG_ENV } from '../../controller/api/episode-config.ts';
import {
  EPISODE_PROMPT_VARS_ENV,
  PROMPT_VARS_DROPPED_MAX_BYTES,
  PROMPT_VARS_MAX_BYTES,
  podPromptVars,
} from '../../controller/api/prompt-vars.ts';
import { buildEpisodePod } from '../../controller/executors/cluster/episode-pod.ts';
import { episodeConfig, nodeAgent, removeTempDirs, runRunner, tempDir } from './runner-harness.ts';

const TEMPLATE = 'Task {{task}}. Plan: {{bb.plan}}\nChildren:\n{{children}}\nInbox:\n{{messages}}\nUnset: {{bb.none}}';
const echo = nodeAgent('process.stdin.pipe(process.stdout)');

/** The env the controller gives the pod of episode 2 of `lead`, whose spec reads PROMPT.md. */
function podEnv(more: Record<string, string>, promptVars: Record<string, string>): Record<string, string> {
  const spec = AgentTaskSpecSchema.parse({ promptFile: 'PROMPT.md', agent: { command: echo } });
  const pod = buildEpisodePod({
    task: { metadata: { name: 'lead', namespace: 'team-a', uid: 'u1' } },
    spec,
    episode: 2,
    more,
    promptVars,
  });
  const env: Record<string, string> = {};
  for (const e of pod.spec.containers[0]?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  return env;
}

async function renderInPod(env: Record<string, string>) {
  const ws = await tempDir('ws');
  await writeFile(path.join(ws, 'PROMPT.md'), TEMPLATE);
  const config = { ...JSON.parse(env[EPISODE_CONFIG_ENV] ?? '{}'), workspaceDir: ws };
  return runRunner({ agent: echo, config, env: { [EPISODE_PROMPT_VARS_ENV]: env[EPISODE_PROMPT_VARS_ENV] ?? '' } });
}

describe('promptFile with agent ops placeholders in the pod', () => {
  after(removeTempDirs);

  it('renders {{bb.KEY}}, {{children}} and {{messages}} the controller put in the pod, once', async () => {
    const env = podEnv(
      { 'bb.plan': 'v1 {{task}}' },
      { children: '- lead-a: Succeeded\n  last message: done', messages: 'from bob at T:\nsay {{episode}}' },
    );
    assert.equal(env.EPISODIC_PROMPT, undefined, 'the controller does not render a promptFile');
    const run = await renderInPod(env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(
      run.stdout,
      'Task lead. Plan: v1 {{task}}\nChildren:\n- lead-a: Succeeded\n  last message: done\n' +
        'Inbox:\nfrom bob at T:\nsay {{episode}}\nUnset: {{bb.none}}',
    );
    assert.equal(run.result?.outputsNote, undefined);
  });

  it('a blackboard value past the bound: left out of the pod, rendered empty, named in the result', async () => {
    const big = 'x'.repeat(PROMPT_VARS_MAX_BYTES);
    const env = podEnv({ 'bb.plan': big, 'bb.other': 'o' }, { children: '', messages: 'from bob at T:\nhi' });
    assert.ok(Buffer.byteLength(env[EPISODE_PROMPT_VARS_ENV] ?? '') < PROMPT_VARS_MAX_BYTES);
    const run = await renderInPod(env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^Task lead\. Plan: \nChildren:\n\nInbox:\nfrom bob at T:\nhi\n/);
    assert.match(run.result?.outputsNote ?? '', /over EPISODIC_PROMPT_VARS's bound, rendered empty: bb\.plan/);
  });

  it('a corrupt EPISODIC_PROMPT_VARS is a configuration error: exit 2, fatal, the agent never runs', async () => {
    const ws = await tempDir('ws');
    await writeFile(path.join(ws, 'PROMPT.md'), TEMPLATE);
    const config = episodeConfig({ workspaceDir: ws, promptFile: 'PROMPT.md' });
    for (const [raw, why] of [
      ['{"vars":', /EPISODIC_PROMPT_VARS is not valid JSON/],
      ['{"vars":{"bb.plan":7}}', /invalid EPISODIC_PROMPT_VARS: vars\.bb\.plan: /],
    ] as const) {
      const run = await runRunner({ agent: echo, config, env: { [EPISODE_PROMPT_VARS_ENV]: raw } });
      assert.equal(run.code, 2);
      assert.equal(run.result?.errorClass, 'fatal');
      assert.match(run.result?.message ?? '', why);
      assert.equal(run.stdout, '');
    }
  });
});

describe('podPromptVars', () => {
  const table: Array<{ name: string; more: Record<string, string>; max: number; kept: string[]; dropped?: string[] }> =
    [
      { name: 'all fit', more: { messages: 'm', 'bb.a': '1' }, max: 1024, kept: ['messages', 'bb.a'] },
      {
        name: 'blackboard keys in name order while they fit; the rest named',
        more: { 'bb.b': 'x'.repeat(40), 'bb.a': 'x'.repeat(40), 'bb.c': 'y' },
        max: 70,
        kept: ['bb.a', 'bb.c'],
        dropped: ['bb.b'],
      },
      {
        name: 'messages and children always go, even past the bound: they are bounded where they are made',
        more: { messages: 'm'.repeat(100), children: 'c'.repeat(100), 'bb.a': '1' },
        max: 50,
        kept: ['children', 'messages'],
        dropped: ['bb.a'],
      },
      {
        name: 'the bound counts JSON bytes: escapes and UTF-8',
        more: { 'bb.a': '\u0001'.repeat(10), 'bb.b': 'é'.repeat(10) },
        max: 2 + 8 + 62 + 10,
        kept: ['bb.a'],
        dropped: ['bb.b'],
      },
    ];
  for (const row of table)
    it(row.name, () => {
      const got = podPromptVars(row.more, row.max);
      assert.deepEqual(Object.keys(got.vars), row.kept);
      assert.deepEqual(got.dropped, row.dropped);
    });

  it('the whole stays under the 128 KiB a Linux environment string may hold', () => {
    assert.ok(PROMPT_VARS_MAX_BYTES + PROMPT_VARS_DROPPED_MAX_BYTES + 64 < 128 * 1024);
  });
});
