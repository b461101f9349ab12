// Part (a): per-episode overhead. One task, N episodes of a stand-in agent through `episodic run
// --max-concurrent 1`, against a bash `while` loop doing the same per-episode work with the same agent:
// render the prompt, run the agent on it (stdin) in the workspace, append its output to a per-episode log,
// grep that log for the promise. Sides alternate; the ratios are medians of each repetition's own ratio.
// The goal is on a Node agent (what real agent CLIs are); a shell agent, whose ~2 ms per run exposes the
// harness itself, is measured too, without a goal. CLI start-up is included on both.
//
//   node bench/local/episodes.ts [--quick] [--reps N] [--size EPISODES] [--cli PATH] [--keep]
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchOptions, Metric, PartResult } from './lib.ts';
import {
  cliArgv,
  median,
  memoryMB,
  metric,
  NODE,
  progress,
  removeDir,
  round,
  runAlone,
  spawnTo,
  tempDir,
} from './lib.ts';

const GOAL_RATIO = 1.1;

type AgentKind = 'node' | 'shell';

/**
 * The shell stand-in: one /bin/sh process and shell builtins only (no forks), so what is measured is the
 * harness around it. It reads the prompt, counts its runs in ./count and prints a Claude Code stream-json
 * result; run number `succeedAfter` says the promise, earlier runs exit 0 without it (the task continues).
 */
export function agentScript(succeedAfter: number): string {
  return `#!/bin/sh
while IFS= read -r line || [ -n "$line" ]; do :; done
n=0
[ -f count ] && read -r n <count
n=$((n + 1))
echo "$n" >count
if [ "$n" -ge ${succeedAfter} ]; then text='all done <promise>COMPLETE</promise>'; else text="did step $n"; fi
printf '{"type":"result","subtype":"success","is_error":false,"result":"%s","total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1}}\\n' "$text"
`;
}

/** The Node stand-in: the same behaviour as a Node program (started by its #! line on both sides). */
export function nodeAgentScript(succeedAfter: number): string {
  return `#!${NODE}
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
let prompt = '';
for await (const chunk of process.stdin) prompt += chunk;
const n = (existsSync('count') ? Number(readFileSync('count', 'utf8')) : 0) + 1;
writeFileSync('count', String(n));
const text = n >= ${succeedAfter} ? 'all done <promise>COMPLETE</promise>' : \`did step \${n}\`;
const usage = { input_tokens: prompt.length, output_tokens: 1 };
process.stdout.write(JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: text, total_cost_usd: 0, usage }) + '\\n');
`;
}

/** The baseline: what a shell "ralph loop" does per episode, nothing more. */
export const BASELINE_LOOP = `#!/bin/bash
# usage: loop.sh AGENT WORKSPACE LOGDIR MAX
set -u
agent=$1 ws=$2 logs=$3 max=$4
mkdir -p "$logs"
cd "$ws" || exit 2
i=1
while [ "$i" -le "$max" ]; do
  printf 'Episode %s of %s.' "$i" "$max" | "$agent" >>"$logs/episode-$i.log" 2>&1
  if grep -q '<promise>COMPLETE</promise>' "$logs/episode-$i.log"; then exit 0; fi
  i=$((i + 1))
done
exit 1
`;

function taskYaml(agent: string, maxEpisodes: number): string {
  return `apiVersion: episodic.dev/v1alpha1
kind: AgentTask
metadata:
  name: loop
spec:
  prompt: "Episode {{episode}} of {{maxEpisodes}}."
  agent:
    command: [${JSON.stringify(agent)}]
    output: claude
  workspace: ws
  limits:
    maxEpisodes: ${maxEpisodes}
    episodeTimeoutSeconds: 60
`;
}

interface Side {
  specDir: string;
  ws: string;
  agent: string;
  episodes: number;
}

function setupSide(root: string, name: string, episodes: number, kind: AgentKind): Side {
  const dir = join(root, name);
  const specDir = join(dir, 'specs');
  const ws = join(specDir, 'ws');
  mkdirSync(ws, { recursive: true });
  const agent = join(dir, kind === 'node' ? 'agent.mjs' : 'agent.sh');
  writeFileSync(agent, kind === 'node' ? nodeAgentScript(episodes) : agentScript(episodes));
  chmodSync(agent, 0o755);
  writeFileSync(join(specDir, 'loop.yaml'), taskYaml(agent, episodes));
  return { specDir, ws, agent, episodes };
}

function readCount(ws: string): number {
  try {
    return Number(readFileSync(join(ws, 'count'), 'utf8').trim());
  } catch {
    return 0;
  }
}

async function runEpisodic(
  opts: BenchOptions,
  side: Side,
  root: string,
  tag: string,
): Promise<{ ms: number; peakMB: number }> {
  rmSync(join(side.ws, 'count'), { force: true });
  const state = join(root, `state-${tag}`);
  const args = ['run', side.specDir, '--max-concurrent', '1', '--state-dir', state, '--log-level', 'info'];
  const s = spawnTo(cliArgv(opts, args, `episodes-${tag}`), {
    stdout: join(root, `${tag}.out`),
    stderr: join(root, `${tag}.err`),
  });
  let peakMB = 0;
  const sampler = setInterval(() => {
    const m = memoryMB(s.pid);
    if (m && m.hwm > peakMB) peakMB = m.hwm;
  }, 50);
  const { code, wallMs } = await s.exited;
  clearInterval(sampler);
  const count = readCount(side.ws);
  if (code !== 0 || count !== side.episodes) {
    throw new Error(
      `episodic run (${tag}) exited ${code} after ${count}/${side.episodes} episodes; see ${root}/${tag}.err (use --keep)`,
    );
  }
  rmSync(state, { recursive: true, force: true });
  return { ms: wallMs, peakMB };
}

async function runBaseline(side: Side, root: string, tag: string): Promise<number> {
  rmSync(join(side.ws, 'count'), { force: true });
  const logs = join(root, `logs-${tag}`);
  const loop = join(root, 'loop.sh');
  const s = spawnTo(['/bin/bash', loop, side.agent, side.ws, logs, String(side.episodes)], {
    stdout: join(root, `${tag}.out`),
    stderr: join(root, `${tag}.err`),
  });
  const { code, wallMs } = await s.exited;
  const count = readCount(side.ws);
  if (code !== 0 || count !== side.episodes)
    throw new Error(`baseline loop (${tag}) exited ${code} after ${count}/${side.episodes} episodes`);
  rmSync(logs, { recursive: true, force: true });
  return wallMs;
}

interface Comparison {
  episodes: number;
  episodicMs: number[];
  baselineMs: number[];
  startupMs: number[];
  peakRssMB: number[];
}

/** `reps` alternating runs of both sides with one agent kind, each followed by a 1-episode run (start-up). */
async function compare(
  opts: BenchOptions,
  root: string,
  kind: AgentKind,
  episodes: number,
  reps: number,
): Promise<Comparison> {
  const main = setupSide(root, `${kind}-main`, episodes, kind);
  const one = setupSide(root, `${kind}-one`, 1, kind);
  const c: Comparison = { episodes, episodicMs: [], baselineMs: [], startupMs: [], peakRssMB: [] };
  // Warm the page cache (node, the sources, bash, the agent) so the first measured run is not penalised.
  await runEpisodic(opts, one, root, `${kind}-warmup`);
  await runBaseline(one, root, `${kind}-warmup-baseline`);
  for (let r = 0; r < reps; r++) {
    const order = r % 2 === 0 ? ['episodic', 'baseline'] : ['baseline', 'episodic'];
    for (const side of order) {
      if (side === 'episodic') {
        const { ms, peakMB } = await runEpisodic(opts, main, root, `${kind}-episodic-${r}`);
        c.episodicMs.push(ms);
        c.peakRssMB.push(peakMB);
      } else {
        c.baselineMs.push(await runBaseline(main, root, `${kind}-baseline-${r}`));
      }
    }
    c.startupMs.push((await runEpisodic(opts, one, root, `${kind}-startup-${r}`)).ms);
    progress(
      `[episodes] ${kind} agent, rep ${r + 1}/${reps}: episodic ${(c.episodicMs[r] / 1000).toFixed(2)} s, bash loop ${(c.baselineMs[r] / 1000).toFixed(2)} s, 1-episode run ${c.startupMs[r].toFixed(0)} ms`,
    );
  }
  return c;
}

// The machine's speed drifts over tens of seconds: ratios of the runs of one repetition (seconds apart),
// then their median, are steadier than a ratio of medians taken across the whole part.
function ratios(c: Comparison): number[] {
  return c.episodicMs.map((ms, r) => ms / c.baselineMs[r]);
}

/** Per-episode overhead over the bash loop, CLI start-up spread over the episodes. */
function overheadMs(c: Comparison): number {
  return median(c.episodicMs.map((ms, r) => (ms - c.baselineMs[r]) / c.episodes));
}

export async function benchEpisodes(opts: BenchOptions): Promise<PartResult> {
  const started = performance.now();
  const episodes = opts.size ?? (opts.quick ? 20 : 200);
  const reps = opts.reps ?? (opts.quick ? 1 : 7);
  const root = tempDir('episodes');
  writeFileSync(join(root, 'loop.sh'), BASELINE_LOOP);
  progress(`[episodes] ${episodes} episodes, --max-concurrent 1, ${reps} rep(s) per side (Node agent), in ${root}`);
  let node: Comparison;
  let shell: Comparison;
  try {
    node = await compare(opts, root, 'node', episodes, reps);
    shell = await compare(opts, root, 'shell', episodes, Math.min(reps, 3));
  } finally {
    removeDir(root, opts.keep);
  }
  const n = { e: median(node.episodicMs), b: median(node.baselineMs), s: median(node.startupMs) };
  const metrics: Metric[] = [
    metric('episodicSeconds', `Node agent: episodic run, ${episodes} episodes (median)`, n.e / 1000, 's'),
    metric('baselineSeconds', `Node agent: bash while loop, ${episodes} episodes (median)`, n.b / 1000, 's'),
    metric('ratio', 'Node agent: ratio episodic / bash loop, start-up included', median(ratios(node)), 'x', {
      op: '<=',
      value: GOAL_RATIO,
    }),
    metric('overheadMsPerEpisode', 'Node agent: overhead per episode (incl. CLI start)', overheadMs(node), 'ms'),
    metric('startupMs', 'CLI start + stop (a 1-episode run)', n.s, 'ms'),
    metric(
      'marginalMsPerEpisode',
      'episodic time per further episode',
      episodes > 1 ? (n.e - n.s) / (episodes - 1) : NaN,
      'ms',
    ),
    metric('baselineMsPerEpisode', 'bash loop time per episode', n.b / episodes, 'ms'),
    metric('peakRssMB', 'controller peak RSS (VmHWM)', median(node.peakRssMB), 'MB'),
    metric('shellRatio', 'shell agent (~2 ms a run): ratio episodic / bash loop', median(ratios(shell)), 'x'),
    metric('shellOverheadMsPerEpisode', 'shell agent: overhead per episode (incl. CLI start)', overheadMs(shell), 'ms'),
  ];
  return {
    part: 'a',
    title: `${episodes} episodes of one task vs a bash while loop`,
    seconds: round((performance.now() - started) / 1000, 1),
    metrics,
    details: {
      episodes,
      reps,
      node: { ...node, ratios: ratios(node) },
      shell: { ...shell, ratios: ratios(shell) },
      nodeAgent: nodeAgentScript(episodes),
      shellAgent: agentScript(episodes),
      baselineLoop: BASELINE_LOOP,
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) await runAlone(benchEpisodes, process.argv.slice(2));
