// Pipelines end to end in local mode (`episodic run`, real processes, stand-in agents): three steps in one
// workspace, each with its own agent command, output format and completion promise; EPISODIC_STEP reaching
// the agent, {{step.name}} in a promptFile, status.steps and the episode records, `episodic get` showing the
// step; and a failing middle step that ends the task naming it, the last step never run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAKE_CLAUDE, FAKE_CODEX, NODE, readStatus, runCli, specDir, tempDir } from '../support/local.ts';

const fast = { backoff: { initialSeconds: 0.05, factor: 1, maxSeconds: 0.05 } };

interface Run {
  agent: string;
  argv: string[];
  env: Record<string, string>;
  stdin: string;
}

function runs(file: string): Run[] {
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Run);
}

function records(dir: string, name: string): Array<{ number: number; step?: string; outcome: string }> {
  const file = join(dir, '.episodic', 'logs', 'default', name, 'episodes.jsonl');
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

/** plan (claude stream-json, PLANNED) → implement (codex JSONL, BUILT, two episodes) → review (claude text, APPROVED). */
function pipeline(record: string, implement: Record<string, unknown>) {
  return {
    ...fast,
    prompt: undefined, // the helper's default: a pipeline has its prompts in its steps
    agent: {
      command: [NODE, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose'],
      output: 'claude',
      env: [{ name: 'FAKE_AGENT_RECORD', value: record }],
    },
    limits: { maxEpisodes: 5, episodeTimeoutSeconds: 30 },
    steps: [
      {
        name: 'plan',
        prompt: 'Plan the work ({{step.name}}, step {{step.index}}).',
        agent: { env: [{ name: 'FAKE_AGENT_PROMISE', value: 'PLANNED' }] },
        completion: { promise: 'PLANNED' },
      },
      {
        name: 'implement',
        prompt: 'Implement the plan.',
        agent: {
          command: [NODE, FAKE_CODEX, 'exec', '--json'],
          output: 'codex',
          // Codex reports tokens, not cost: the step's own pricing.
          pricing: { inputPerMTok: 100, outputPerMTok: 1000 },
          env: implement.env,
          ...(implement.agent as object),
        },
        completion: { promise: 'BUILT' },
        ...(implement.limits ? { limits: implement.limits } : {}),
      },
      {
        name: 'review',
        promptFile: 'REVIEW.md',
        agent: {
          command: [NODE, FAKE_CLAUDE, '-p', '--output-format', 'text'],
          output: 'text',
          env: [
            { name: 'FAKE_AGENT_MODE', value: 'success' },
            { name: 'FAKE_AGENT_PROMISE', value: 'APPROVED' },
          ],
        },
        completion: { promise: 'APPROVED' },
      },
    ],
  };
}

function setUp(implement: Record<string, unknown>): { dir: string; record: string } {
  const record = join(tempDir('episodic-pipeline-record-'), 'runs.jsonl');
  const dir = specDir([{ name: 'feature', spec: pipeline(record, implement) }]);
  const ws = join(dir, 'ws', 'feature');
  mkdirSync(ws, { recursive: true });
  writeFileSync(join(ws, 'REVIEW.md'), 'Review it as the {{step.name}} step ({{step.index}} of 3).\n');
  // implement: a codex script by episode number: the first of its episodes continues, the second is done.
  writeFileSync(
    join(ws, 'implement.json'),
    JSON.stringify({ episodes: { '2': { mode: 'continue' }, '3': { mode: 'success', promise: 'BUILT' } } }),
  );
  return { dir, record };
}

test('pipeline: three steps with their own agents and promises run in order; the step reaches agent, status, records and get', async () => {
  const { dir, record } = setUp({ env: [{ name: 'FAKE_AGENT_SCRIPT', value: 'implement.json' }] });
  const res = await runCli(['run', dir]);
  assert.equal(res.code, 0, res.stderr);

  const s = readStatus(dir, 'feature')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.equal(s?.reason, 'PromiseDetected');
  assert.match(s?.message ?? '', /^step 3\/3 review: episode 4 finished the task/);
  assert.deepEqual(s?.step, { index: 3, name: 'review', summary: '3/3 review', generation: 1 });
  assert.deepEqual(
    s?.steps?.map((x) => [x.name, x.phase, x.reason, x.episodes]),
    [
      ['plan', 'Succeeded', 'PromiseDetected', 1],
      ['implement', 'Succeeded', 'PromiseDetected', 2],
      ['review', 'Succeeded', 'PromiseDetected', 1],
    ],
  );
  for (const step of s?.steps ?? []) assert.ok(step.startedAt && step.finishedAt, step.name);
  // Claude reports its cost, codex its tokens (priced by the step's pricing); plain text reports neither.
  assert.deepEqual(
    s?.steps?.map((x) => x.costUSD > 0),
    [true, true, false],
  );
  assert.equal(s?.episodes, 4);
  const perStep = (s?.steps ?? []).reduce((sum, x) => sum + x.costUSD, 0);
  assert.ok(Math.abs((s?.costUSD ?? 0) - perStep) < 1e-9, 'the task costs what its steps cost');

  assert.deepEqual(
    records(dir, 'feature').map((r) => [r.number, r.step, r.outcome]),
    [
      [1, 'plan', 'succeeded'],
      [2, 'implement', 'continue'],
      [3, 'implement', 'succeeded'],
      [4, 'review', 'succeeded'],
    ],
  );

  // Each step's own command, and EPISODIC_STEP / EPISODIC_STEP_INDEX in every episode's environment.
  const seen = runs(record);
  assert.deepEqual(
    seen.map((r) => [r.agent, r.env.EPISODIC_STEP, r.env.EPISODIC_STEP_INDEX, r.env.EPISODIC_EPISODE]),
    [
      ['claude', 'plan', '1', '1'],
      ['codex', 'implement', '2', '2'],
      ['codex', 'implement', '2', '3'],
      ['claude', 'review', '3', '4'],
    ],
  );
  assert.deepEqual(seen[0].argv.slice(-2), ['stream-json', '--verbose']);
  assert.deepEqual(seen[3].argv.slice(-1), ['text']);
  // The task's env reaches every step; a step's env only its own episodes.
  assert.equal(seen[1].env.FAKE_AGENT_SCRIPT, 'implement.json');
  assert.equal(seen[3].env.FAKE_AGENT_SCRIPT, undefined);
  assert.equal(seen[0].env.FAKE_AGENT_PROMISE, 'PLANNED');
  // {{step.name}} and {{step.index}} in an inline prompt and in a promptFile.
  assert.match(seen[0].stdin, /Plan the work \(plan, step 1\)\./);
  assert.match(seen[3].stdin, /Review it as the review step \(3 of 3\)\./);

  const get = await runCli(['get', dir]);
  assert.equal(get.code, 0, get.stderr);
  const [header, row] = get.stdout.trim().split('\n');
  assert.match(header, /^NAMESPACE\s+NAME\s+PHASE\s+EPISODES\s+COST\s+REASON\s+STEP\s+PROGRESS\b/);
  assert.match(row, /feature\s+Succeeded\s+4\s+\$\S+\s+PromiseDetected\s+3\/3 review/);
  const episodes = await runCli(['get', 'feature', dir, '--episodes']);
  assert.equal(episodes.code, 0, episodes.stderr);
  const lines = episodes.stdout.trim().split('\n');
  assert.match(lines[0], /^EPISODE\s+STEP\s+OUTCOME/);
  assert.match(lines[2], /^2\s+implement\s+continue/);
});

test('pipeline: a failing middle step ends the task Skipped, naming the step; the last step never runs', async () => {
  // implement crashes (exit 1, no result): a failed episode, twice.
  const { dir, record } = setUp({
    agent: { command: [NODE, FAKE_CLAUDE, '-p', '--output-format', 'stream-json', '--verbose'], output: 'claude' },
    env: [{ name: 'FAKE_AGENT_MODE', value: 'fail' }],
    limits: { maxConsecutiveFailures: 2 },
  });
  const res = await runCli(['run', dir]);
  assert.notEqual(res.code, 0);
  const s = readStatus(dir, 'feature')?.status;
  assert.equal(s?.phase, 'Skipped');
  assert.equal(s?.reason, 'ConsecutiveFailures');
  assert.match(s?.message ?? '', /^step 2\/3 implement: 2 consecutive failed episodes/);
  assert.deepEqual(s?.step, { index: 2, name: 'implement', summary: '2/3 implement', generation: 1 });
  assert.deepEqual(
    s?.steps?.map((x) => [x.name, x.phase, x.episodes]),
    [
      ['plan', 'Succeeded', 1],
      ['implement', 'Skipped', 2],
      ['review', 'Pending', 0],
    ],
  );
  assert.deepEqual(
    runs(record).map((r) => r.env.EPISODIC_STEP),
    ['plan', 'implement', 'implement'],
  );
  assert.deepEqual(
    records(dir, 'feature').map((r) => r.step),
    ['plan', 'implement', 'implement'],
  );
});

test('pipeline: a task stopped for review in its middle step resumes there (episodic resume, a later run); plan never runs again', async () => {
  const { dir, record } = setUp({
    env: [{ name: 'FAKE_AGENT_SCRIPT', value: 'implement.json' }],
    limits: { maxEpisodes: 1 },
  });
  const yaml = join(dir, 'feature.yaml');
  const manifest = JSON.parse(readFileSync(yaml, 'utf8'));
  writeFileSync(yaml, JSON.stringify({ ...manifest, spec: { ...manifest.spec, resume: { policy: 'Manual' } } }));
  const first = await runCli(['run', dir]);
  assert.notEqual(first.code, 0);
  const stopped = readStatus(dir, 'feature')?.status;
  assert.equal(stopped?.phase, 'NeedsReview');
  assert.equal(stopped?.reason, 'MaxEpisodesReached');
  assert.match(stopped?.message ?? '', /^step 2\/3 implement: 1 episodes without finishing the task \(maxEpisodes 1\)/);

  const resume = await runCli(['resume', 'feature', dir, '--episodes', '1', '--by', 'alice']);
  assert.equal(resume.code, 0, resume.stderr);
  const second = await runCli(['run', dir]);
  assert.equal(second.code, 0, second.stderr);
  const s = readStatus(dir, 'feature')?.status;
  assert.equal(s?.phase, 'Succeeded');
  assert.deepEqual(
    s?.steps?.map((x) => [x.name, x.phase, x.episodes]),
    [
      ['plan', 'Succeeded', 1],
      ['implement', 'Succeeded', 2],
      ['review', 'Succeeded', 1],
    ],
  );
  assert.deepEqual(
    runs(record).map((r) => `${r.env.EPISODIC_EPISODE} ${r.env.EPISODIC_STEP}`),
    ['1 plan', '2 implement', '3 implement', '4 review'],
  );
});
