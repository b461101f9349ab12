// bench/triggers: N open labelled issues (default 1,000) on a real Gitea 1.26, one trigger; then the same on
// the GitHub stand-in (test/support/github-standin.ts, GitHub's shapes and ETags). Measures the trigger side
// in this process (the tasks are created, not run): the time of the pass that creates every task, the forge
// requests it took, the requests of a poll when nothing changed, and this process's RSS.
// Usage: node bench/triggers/run.ts [--issues N]
import { join } from 'node:path';
import pino from 'pino';
import { AgentTriggerSpecSchema } from '../../controller/api/agent-trigger.ts';
import { systemClock } from '../../controller/core/clock.ts';
import { LocalCreatedTasks } from '../../controller/sources/local/created-tasks.ts';
import { LocalTriggerStatus } from '../../controller/sources/triggers/local-triggers.ts';
import { TriggerRunner } from '../../controller/sources/triggers/trigger-runner.ts';
import { startGitea } from '../../test/support/gitea.ts';
import { GitHubStandin } from '../../test/support/github-standin.ts';
import { removeDir, tempDir } from '../local/lib.ts';

const at = process.argv.indexOf('--issues');
const ISSUES = at > 0 ? Number(process.argv[at + 1]) : 1000;
const OWNER = 'episodic-admin';

const gitea = await startGitea();
const dir = tempDir('episodic-bench-triggers-');
try {
  const alice = await gitea.createUser('alice');
  await gitea.createRepo(OWNER, 'bench');
  await gitea.addCollaborator(OWNER, 'bench', alice.name, 'write');
  const label = await gitea.createLabel(OWNER, 'bench', 'agent');
  const made = Date.now();
  for (let i = 0; i < ISSUES; i += 10)
    await Promise.all(
      Array.from({ length: Math.min(10, ISSUES - i) }, (_, k) =>
        gitea.createIssue(OWNER, 'bench', { title: `Issue ${i + k}`, body: 'b', labels: [label.id] }, alice.token),
      ),
    );
  console.log(`setup: ${ISSUES} issues created in ${((Date.now() - made) / 1000).toFixed(1)} s`);

  const gitea1 = await measure(
    'gitea',
    { apiURL: gitea.url, repo: `${OWNER}/bench` },
    dir,
    async () => gitea.adminToken,
  );
  const gh = await new GitHubStandin({ token: 'ghp_bench', login: 'episodic-bot', repo: 'octo/bench' }).start();
  try {
    for (let i = 0; i < ISSUES; i++) gh.addIssue({ title: `Issue ${i}`, user: 'alice', labels: ['agent'] });
    const github = await measure(
      'github',
      { apiURL: gh.url, repo: 'octo/bench' },
      join(dir, 'gh'),
      async () => 'ghp_bench',
    );
    if (gitea1 !== ISSUES || github !== ISSUES) process.exitCode = 1;
  } finally {
    await gh.stop();
  }
} finally {
  await gitea.stop();
  removeDir(dir, false);
}

/** One trigger's first pass and an idle poll against a forge; prints the figures, returns the tasks created. */
async function measure(
  forge: 'gitea' | 'github',
  where: { apiURL: string; repo: string },
  dir: string,
  secret: () => Promise<string>,
): Promise<number> {
  const requests = new Map<string, number>();
  const stateDir = join(dir, '.episodic');
  const created = new LocalCreatedTasks({ stateDir });
  const status = new LocalTriggerStatus(stateDir);
  const runner = new TriggerRunner({
    created,
    finished: () => false,
    status,
    clock: systemClock,
    secret,
    counters: {
      taskCreated: () => {},
      webhookDelivery: () => {},
      forgeRequest: (_forge, code) => requests.set(code, (requests.get(code) ?? 0) + 1),
    },
    logger: pino({ level: 'silent' }),
  });
  const spec = AgentTriggerSpecSchema.parse({
    source: { [forge]: { ...where, labels: ['agent'], tokenEnv: 'T' } },
    template: { spec: { prompt: 'Fix #{{item.number}}: {{item.title}}', agent: { command: ['agent'] } } },
    maxConcurrency: ISSUES,
  });
  const owner = { kind: 'AgentTrigger' as const, namespace: 'default', name: 'bench' };
  const trigger = { key: 'default/bench', namespace: 'default', name: 'bench', spec, owner };
  const total = () => [...requests.values()].reduce((a, b) => a + b, 0);

  const started = performance.now();
  await runner.pass(trigger);
  const passMs = performance.now() - started;
  const tasks = (await created.list(owner)).length;
  const firstRequests = total();
  const idle = performance.now();
  const idleCpu = process.cpuUsage();
  await runner.pass(trigger);
  const idleMs = performance.now() - idle;
  const { user, system } = process.cpuUsage(idleCpu);
  const idleRequests = total() - firstRequests;
  const lastError = status.read(trigger.key)?.lastError;
  if (lastError) console.log(`${forge} idle poll failed: ${lastError}`);
  const rss = process.memoryUsage().rss / 2 ** 20;
  console.log(
    `${forge} first pass: ${tasks} tasks created in ${(passMs / 1000).toFixed(2)} s, ${firstRequests} requests`,
  );
  const cpuMs = (user + system) / 1000;
  console.log(
    `${forge} idle poll (nothing changed): ${idleRequests} request(s), ${idleMs.toFixed(0)} ms (${cpuMs.toFixed(0)} ms CPU)`,
  );
  console.log(
    `${forge}: RSS of this process after both: ${rss.toFixed(0)} MiB; requests by code: ${JSON.stringify(Object.fromEntries(requests))}`,
  );
  return tasks;
}
