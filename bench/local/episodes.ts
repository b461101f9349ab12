// Part (a): per-episode overhead. One task, N episodes of a trivial stand-in agent through `episodic run
// --max-concurrent 1`, against a bash `while` loop doing the same per-episode work with the same agent:
// render the prompt, run the agent on it (stdin) in the workspace, append its output to a per-episode log,
// grep that log for the promise. Sides alternate; the ratios are medians of each repetition's own ratio.
//
//   node bench/local/episodes.ts [--quick] [--reps N] [--size EPISODES] [--cli PATH] [--keep]
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchOptions, PartResult } from './lib.ts';
import { cliArgv, median, memoryMB, metric, progress, removeDir, round, runAlone, spawnTo, tempDir } from './lib.ts';

const GOAL_RATIO = 1.1;

/**
 * The stand-in agent: one /bin/sh process and shell builtins only (no forks), so what is measured is the
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

function setupSide(root: string, name: string, episodes: number): Side {
  const dir = join(root, name);
  const specDir = join(dir, 'specs');
  const ws = join(specDir, 'ws');
  mkdirSync(ws, { recursive: true });
  const agent = join(dir, 'agent.sh');
  writeFileSync(agent, agentScript(episodes));
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

async function runEpisodic(opts: BenchOptions, side: Side, root: string, tag: string): Promise<{ ms: number; peakMB: number }> {
  rmSync(join(side.ws, 'count'), { force: true });
  const state = join(root, `state-${tag}`);
  const args = ['run', side.specDir, '--max-concurrent', '1', '--state-dir', state, '--log-level', 'info'];
  const s = spawnTo(cliArgv(opts, args, `episodes-${tag}`), { stdout: join(root, `${tag}.out`), stderr: join(root, `${tag}.err`) });
  let peakMB = 0;
  const sampler = setInterval(() => {
    const m = memoryMB(s.pid);
    if (m && m.hwm > peakMB) peakMB = m.hwm;
  }, 50);
  const { code, wallMs } = await s.exited;
  clearInterval(sampler);
  const count = readCount(side.ws);
  if (code !== 0 || count !== side.episodes) {
    throw new Error(`episodic run (${tag}) exited ${code} after ${count}/${side.episodes} episodes; see ${root}/${tag}.err (use --keep)`);
  }
  rmSync(state, { recursive: true, force: true });
  return { ms: wallMs, peakMB };
}

async function runBaseline(side: Side, root: string, tag: string): Promise<number> {
  rmSync(join(side.ws, 'count'), { force: true });
  const logs = join(root, `logs-${tag}`);
  const loop = join(root, 'loop.sh');
  const s = spawnTo(['/bin/bash', loop, side.agent, side.ws, logs, String(side.episodes)], { stdout: join(root, `${tag}.out`), stderr: join(root, `${tag}.err`) });
  const { code, wallMs } = await s.exited;
  const count = readCount(side.ws);
  if (code !== 0 || count !== side.episodes) throw new Error(`baseline loop (${tag}) exited ${code} after ${count}/${side.episodes} episodes`);
  rmSync(logs, { recursive: true, force: true });
  return wallMs;
}

export async function benchEpisodes(opts: BenchOptions): Promise<PartResult> {
  const started = performance.now();
  const episodes = opts.size ?? (opts.quick ? 20 : 200);
  const reps = opts.reps ?? (opts.quick ? 1 : 7);
  const root = tempDir('episodes');
  writeFileSync(join(root, 'loop.sh'), BASELINE_LOOP);
  const main = setupSide(root, 'main', episodes);
  const one = setupSide(root, 'one', 1);
  progress(`[episodes] ${episodes} episodes, --max-concurrent 1, ${reps} rep(s) per side, in ${root}`);
  const episodic: number[] = [];
  const baseline: number[] = [];
  const startup: number[] = [];
  const peaks: number[] = [];
  try {
    // Warm the page cache (node, the sources, bash, the agent) so the first measured run is not penalised.
    await runEpisodic(opts, one, root, 'warmup');
    await runBaseline(one, root, 'warmup-baseline');
    for (let r = 0; r < reps; r++) {
      const order = r % 2 === 0 ? ['episodic', 'baseline'] : ['baseline', 'episodic'];
      for (const side of order) {
        if (side === 'episodic') {
          const { ms, peakMB } = await runEpisodic(opts, main, root, `episodic-${r}`);
          episodic.push(ms);
          peaks.push(peakMB);
        } else {
          baseline.push(await runBaseline(main, root, `baseline-${r}`));
        }
      }
      startup.push((await runEpisodic(opts, one, root, `startup-${r}`)).ms);
      progress(`[episodes] rep ${r + 1}/${reps}: episodic ${(episodic[r] / 1000).toFixed(2)} s, bash loop ${(baseline[r] / 1000).toFixed(2)} s, episodic 1-episode run ${startup[r].toFixed(0)} ms`);
    }
  } finally {
    removeDir(root, opts.keep);
  }
  const e = median(episodic);
  const b = median(baseline);
  const s = median(startup);
  const overheadMs = (e - b) / episodes;
  // Without the one-off cost of starting and stopping the CLI (node start, module loading, lock, exit).
  const marginalMs = episodes > 1 ? (e - s) / (episodes - 1) : NaN;
  const baselinePerEpisode = b / episodes;
  // The machine's speed drifts over tens of seconds: ratios of the runs of one repetition (seconds apart),
  // then their median, are steadier than a ratio of medians taken across the whole part.
  const ratios = episodic.map((ms, r) => ms / baseline[r]);
  const perEpisodeRatios = episodic.map((ms, r) => (episodes > 1 ? (ms - startup[r]) / (episodes - 1) / (baseline[r] / episodes) : NaN));
  return {
    part: 'a',
    title: `${episodes} episodes of one task vs a bash while loop`,
    seconds: round((performance.now() - started) / 1000, 1),
    metrics: [
      metric('episodicSeconds', `episodic run, ${episodes} episodes (median)`, e / 1000, 's'),
      metric('baselineSeconds', `bash while loop, ${episodes} episodes (median)`, b / 1000, 's'),
      metric('ratio', 'wall-time ratio episodic / bash loop (median of reps)', median(ratios), 'x', { op: '<=', value: GOAL_RATIO }),
      metric('overheadMsPerEpisode', 'overhead per episode (incl. CLI start)', overheadMs, 'ms'),
      metric('startupMs', 'CLI start + stop (a 1-episode run)', s, 'ms'),
      metric('marginalMsPerEpisode', 'episodic time per further episode', marginalMs, 'ms'),
      metric('baselineMsPerEpisode', 'bash loop time per episode', baselinePerEpisode, 'ms'),
      metric('ratioExclStartup', 'ratio per episode, CLI start excluded (median)', median(perEpisodeRatios), 'x'),
      metric(
        'breakEvenEpisodeMs',
        `episode length at which the ratio would be ${GOAL_RATIO}`,
        ((marginalMs - baselinePerEpisode) / (GOAL_RATIO - 1)),
        'ms',
        undefined,
        'overhead per episode x 10: a real agent episode (seconds to minutes) is far above it',
      ),
      metric('peakRssMB', 'controller peak RSS (VmHWM)', median(peaks), 'MB'),
    ],
    details: { episodes, reps, episodicMs: episodic, baselineMs: baseline, startupMs: startup, ratios, perEpisodeRatios, peakRssMB: peaks, agent: agentScript(episodes), baselineLoop: BASELINE_LOOP },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) await runAlone(benchEpisodes, process.argv.slice(2));
