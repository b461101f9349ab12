// Prometheus metrics shared by local and cluster mode. Labels stop at namespace: a per-task label would
// grow without bound (cardinality); per-task figures live in status.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { TriggerMetrics } from './trigger-metrics.ts';
import type { AgentTaskStatus, Outcome, Phase, Tokens } from '../api/agent-task.ts';
import { PHASES } from '../api/agent-task.ts';
import { BudgetMetrics } from './budget-metrics.ts';
import { LeashMetrics } from './leash-metrics.ts';
import { ResumeMetrics } from './resume-metrics.ts';
import { MergeQueueMetrics } from './merge-queue-metrics.ts';
import { GatewayMetrics } from './gateway-metrics.ts';

export const EVENT_LOOP_PRECISION_MS = 100;

export class EpisodicMetrics {
  readonly registry = new Registry();
  readonly episodes = new Counter({
    name: 'episodic_episodes_total',
    help: 'Episodes finished, by outcome',
    labelNames: ['namespace', 'outcome'],
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'episodic_episode_retries_total',
    help: 'Episodes retried without counting as failures (transient errors, usage limits, interruptions)',
    labelNames: ['namespace', 'reason'],
    registers: [this.registry],
  });
  readonly skipped = new Counter({
    name: 'episodic_tasks_skipped_total',
    help: 'Tasks that were skipped',
    labelNames: ['namespace', 'reason'],
    registers: [this.registry],
  });
  readonly cost = new Counter({
    name: 'episodic_cost_usd_total',
    help: 'Agent spend in US dollars',
    labelNames: ['namespace'],
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'episodic_tokens_total',
    help: 'Tokens used, by kind (input, output, cacheRead, cacheWrite)',
    labelNames: ['namespace', 'kind'],
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'episodic_episode_duration_seconds',
    help: 'Episode wall time, by outcome',
    labelNames: ['namespace', 'outcome'],
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200],
    registers: [this.registry],
  });
  readonly tasks = new Gauge({
    name: 'episodic_tasks',
    help: 'Tasks by phase',
    labelNames: ['namespace', 'phase'],
    registers: [this.registry],
  });
  readonly reconcileErrors = new Counter({
    name: 'episodic_reconcile_errors_total',
    help: 'Reconciles that failed with an error (retried with backoff)',
    registers: [this.registry],
  });
  readonly ops = new Counter({
    name: 'episodic_ops_total',
    help: 'Agent ops ($EPISODIC_OPS) by op and result (applied, rejected; op "invalid": a line that was no op)',
    labelNames: ['namespace', 'op', 'result'],
    registers: [this.registry],
  });
  readonly watchRestarts = new Counter({
    name: 'episodic_watch_restarts_total',
    help: 'Watches restarted after an error, a 410 Gone or silence',
    labelNames: ['resource', 'cause'],
    registers: [this.registry],
  });

  /** Breaker transitions and tasks waiting by reason. */
  readonly leash = new LeashMetrics(this.registry);
  /** Resumes by policy and by a person; tasks needing review by reason. */
  readonly resume = new ResumeMetrics(this.registry);
  /** Tasks created by AgentTriggers and forge requests. */
  readonly triggers = new TriggerMetrics(this.registry);
  /** AgentBudget spend, remaining and held tasks. */
  readonly budgets = new BudgetMetrics(this.registry);
  readonly mergeQueue = new MergeQueueMetrics(this.registry);
  /** The model gateway: answers, tokens and cost per credential; paused credentials. */
  readonly gateway = new GatewayMetrics(this.registry);

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    // The event-loop lag histogram samples with a libuv timer: prom-client's default 10 ms would wake an
    // idle controller 100 times a second. 100 ms still catches the stalls worth seeing.
    if (opts.defaultMetrics !== false)
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_PRECISION_MS });
  }

  /** Called once per finished episode with its recorded outcome. */
  recordEpisode(namespace: string, outcome: Outcome, durationSeconds: number, costUSD: number, tokens: Tokens): void {
    this.episodes.inc({ namespace, outcome });
    this.duration.observe({ namespace, outcome }, Math.max(0, durationSeconds));
    if (costUSD > 0) this.cost.inc({ namespace }, costUSD);
    for (const kind of ['input', 'output', 'cacheRead', 'cacheWrite'] as const) {
      if (tokens[kind] > 0) this.tokens.inc({ namespace, kind }, tokens[kind]);
    }
    if (outcome === 'transient' || outcome === 'usageLimit' || outcome === 'interrupted') {
      this.retries.inc({ namespace, reason: outcome });
    }
  }

  /** Compare a status before and after a reconcile and count what became true. */
  observeTransition(namespace: string, before: AgentTaskStatus | undefined, after: AgentTaskStatus): void {
    const last = after.lastEpisode;
    if (last && last.number !== before?.lastEpisode?.number) {
      const started = last.startedAt ? Date.parse(last.startedAt) : NaN;
      const finished = last.finishedAt ? Date.parse(last.finishedAt) : NaN;
      const seconds = Number.isFinite(started) && Number.isFinite(finished) ? (finished - started) / 1000 : 0;
      const tokens = {
        input: after.tokens.input - (before?.tokens.input ?? 0),
        output: after.tokens.output - (before?.tokens.output ?? 0),
        cacheRead: after.tokens.cacheRead - (before?.tokens.cacheRead ?? 0),
        cacheWrite: after.tokens.cacheWrite - (before?.tokens.cacheWrite ?? 0),
      };
      this.recordEpisode(namespace, last.outcome, seconds, last.costUSD ?? 0, tokens);
    }
    this.leash.observeBreaker(namespace, before, after);
    this.resume.observeResume(namespace, before, after);
    if (after.phase === 'Skipped' && before?.phase !== 'Skipped') {
      this.skipped.inc({ namespace, reason: after.reason ?? 'Unknown' });
    }
  }

  /** A task moved between phases (undefined: it appeared or disappeared). */
  movePhase(namespace: string, from: Phase | undefined, to: Phase | undefined): void {
    if (from === to) return;
    if (from) this.tasks.dec({ namespace, phase: from });
    if (to) this.tasks.inc({ namespace, phase: to });
  }

  /** Replace the phase gauge from a full count (cheap: a handful of label sets). */
  setPhaseCounts(counts: Map<string, Map<Phase, number>>): void {
    this.tasks.reset();
    for (const [namespace, byPhase] of counts) {
      for (const phase of PHASES) this.tasks.set({ namespace, phase }, byPhase.get(phase) ?? 0);
    }
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }
}
