// The loop's book of AgentBudgets: which budgets select a task, their window spend as facts for the pure
// rule (reconciler/budget.ts), and after each pass the task's new spend entered in their ledgers and their
// status written. The loop records every episode's cost, so it is the one that keeps the ledgers.
import type { Logger } from 'pino';
import { AgentBudgetStatusSchema, BudgetLedgerSchema, matchesSelector } from '../api/agent-budget.ts';
import type { AgentBudgetSpec, AgentBudgetStatus, BudgetLedger } from '../api/agent-budget.ts';
import type { AgentTaskStatus } from '../api/agent-task.ts';
import { roundUSD, totalTokens } from '../api/bounds.ts';
import type { BudgetMetrics } from '../metrics/budget-metrics.ts';
import { budgetHoldsTask, expectedEpisode } from '../reconciler/budget.ts';
import type { BudgetFacts } from '../reconciler/budget.ts';
import { addSpend, prune, setCounted, windowEntries } from '../reconciler/budget-ledger.ts';
import { episodesCounted } from '../reconciler/spend-cap.ts';
import type { LiveSpend } from '../reconciler/spend-cap.ts';
import type { Clock } from './clock.ts';
import type { DesiredTask } from './ports.ts';

/** Desired state of one AgentBudget. */
export interface DesiredBudget {
  key: string;
  namespace: string;
  name: string;
  generation: number;
  /** Undefined when it does not validate (specError says why): such a budget holds nothing. */
  spec?: AgentBudgetSpec;
  specError?: string;
}

/** AgentBudgets and their status: a spec directory and state files locally, an informer and /status on a cluster. */
export interface BudgetStore {
  list(): Iterable<DesiredBudget>;
  /** The status last written (pending writes included). */
  read(budget: DesiredBudget): AgentBudgetStatus | undefined;
  write(budget: DesiredBudget, status: AgentBudgetStatus): Promise<void>;
  /** Called with a budget's key whenever it is added, edited or deleted. */
  subscribe(onChange: (key: string) => void): void;
}

const HELD_NAMES_SHOWN = 20;

/** An episode running now and what it is expected to cost. */
interface RunningEpisode {
  number: number;
  usd: number;
  tokens: number;
}

/** A running episode counts at what it is expected to cost, or at what the gateway metered on it once that is more. */
function runningAt(e: RunningEpisode, task: string, live: LiveSpend | undefined) {
  const metered = live?.episode === e.number ? live : undefined;
  return { task, usd: Math.max(e.usd, metered?.costUSD ?? 0), tokens: Math.max(e.tokens, metered?.tokens ?? 0) };
}

export class BudgetBook {
  private readonly ledgers = new Map<string, BudgetLedger>();
  private readonly held = new Map<string, Set<string>>();
  /** Per budget: the tasks with an episode running now, at its expected cost (counted against the window). */
  private readonly running = new Map<string, Map<string, RunningEpisode>>();
  /** Per budget: per task, the last episode whose spend its ledger holds (the gateway adds later ones as metered). */
  private readonly through = new Map<string, Map<string, number>>();
  private readonly changed: (namespace: string) => void;
  private readonly dirty = new Set<string>();
  private writing: Promise<void> = Promise.resolve();
  private readonly store: BudgetStore;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly metrics?: BudgetMetrics;
  private readonly liveSpend?: (task: { namespace: string; name: string }) => LiveSpend | undefined;

  /** `changed`: a budget of this namespace changed; its tasks need another look. */
  constructor(opts: {
    store: BudgetStore;
    clock: Clock;
    log: Logger;
    metrics?: BudgetMetrics;
    changed: (namespace: string) => void;
    /** What the gateway metered so far on a task's running episode (EpisodeExecutor.liveSpend). */
    liveSpend?: (task: { namespace: string; name: string }) => LiveSpend | undefined;
  }) {
    this.store = opts.store;
    this.liveSpend = opts.liveSpend;
    this.clock = opts.clock;
    this.log = opts.log;
    this.metrics = opts.metrics;
    this.changed = opts.changed;
    opts.store.subscribe((key) => {
      const budget = [...this.store.list()].find((b) => b.key === key);
      if (!budget) {
        this.ledgers.delete(key);
        this.held.delete(key);
        this.running.delete(key);
        this.through.delete(key);
        this.metrics?.forget(key);
      } else this.dirty.add(key);
      opts.changed(key.split('/')[0] as string);
      void this.flush().catch((err) =>
        this.log.warn({ budget: key, err: String(err) }, 'budget status write failed; will retry'),
      );
    });
    for (const budget of this.store.list()) this.dirty.add(budget.key);
  }

  /** Budgets that select the task (valid ones only). */
  matching(task: Pick<DesiredTask, 'namespace' | 'labels'>): Array<DesiredBudget & { spec: AgentBudgetSpec }> {
    const out: Array<DesiredBudget & { spec: AgentBudgetSpec }> = [];
    for (const b of this.store.list()) {
      if (b.namespace === task.namespace && b.spec && matchesSelector(b.spec.selector, task.labels))
        out.push(b as DesiredBudget & { spec: AgentBudgetSpec });
    }
    return out;
  }

  /** The facts reconcile() needs; `before` is the task's status as recorded. */
  facts(task: DesiredTask, before: AgentTaskStatus, now: Date): BudgetFacts[] {
    return this.matching(task).map((b) => {
      const ledger = prune(this.ledger(b), b.spec.window, now);
      return {
        name: b.name,
        window: b.spec.window,
        limitUSD: b.spec.limitUSD,
        maxTokens: b.spec.maxTokens,
        maxEpisodesPerHour: b.spec.maxEpisodesPerHour,
        ...windowEntries(ledger, b.spec.window),
        counted: counted(ledger, task.name) ?? countedOf(before),
        ...this.othersOf(b.key, ledger, task.name),
        declaredUSD: task.spec?.limits.expectedEpisodeCostUSD,
        countedThrough: this.countedThrough(b.key, ledger, task.name),
      };
    });
  }

  /** Enters what the pass added to the task's spend into its budgets' ledgers, and who holds it. Synchronous: a parallel pass sees it. */
  afterPass(
    task: DesiredTask,
    before: AgentTaskStatus,
    status: AgentTaskStatus,
    heldBy: readonly string[] | undefined,
    now: Date,
  ): void {
    const matching = this.matching(task);
    for (const b of matching) {
      let ledger = this.ledger(b);
      const seen = counted(ledger, task.name);
      const was = seen ?? countedOf(before);
      const is = countedOf(status);
      // Less than counted: the task was deleted and made again under its name; count from its new start.
      const spend = {
        usd: Math.max(0, is.costUSD - was.costUSD),
        tokens: Math.max(0, is.tokens - was.tokens),
        episodes: Math.max(0, is.episodes - was.episodes),
      };
      if (
        !seen ||
        spend.usd > 0 ||
        spend.tokens > 0 ||
        spend.episodes > 0 ||
        is.costUSD < was.costUSD ||
        is.episodes < was.episodes
      ) {
        ledger = setCounted(addSpend(ledger, b.spec.window, spend, now), task.name, is);
        this.ledgers.set(b.key, ledger);
        this.dirty.add(b.key);
      }
      this.setThrough(b.key, ledger, task.name, episodesCounted(status));
      const heldBefore = this.held.get(b.key)?.has(task.name) ?? false;
      this.setHeld(b.key, task.name, budgetHoldsTask(b.name, heldBy, status, heldBefore));
      const number = status.currentEpisode?.number;
      this.setRunning(b.key, task, number ? { number, ...this.estimate(task, b.key, ledger, status) } : undefined);
    }
    const keys = new Set(matching.map((b) => b.key));
    for (const [key, names] of this.held)
      if (!keys.has(key) && names.has(task.name) && key.startsWith(`${task.namespace}/`))
        this.setHeld(key, task.name, false);
    for (const key of this.running.keys())
      if (!keys.has(key) && key.startsWith(`${task.namespace}/`)) this.setRunning(key, task, undefined);
  }

  /** Per other task the ledger counts (at most MAX_LEDGER_TASKS), the last episode whose spend it holds. */
  private countedThrough(key: string, ledger: BudgetLedger, task: string): Record<string, number> {
    const through = this.through.get(key);
    const out: Record<string, number> = {};
    for (const t of ledger.tasks) {
      const n = t.task === task ? undefined : through?.get(t.task);
      if (n !== undefined) out[t.task] = n;
    }
    return out;
  }

  /** The task's ledger entry holds its episodes through `n`; tasks the ledger dropped are forgotten here too. */
  private setThrough(key: string, ledger: BudgetLedger, task: string, n: number): void {
    let through = this.through.get(key);
    if (!through) this.through.set(key, (through = new Map()));
    through.set(task, n);
    if (through.size > ledger.tasks.length) {
      const kept = new Set(ledger.tasks.map((t) => t.task));
      for (const name of through.keys()) if (!kept.has(name)) through.delete(name);
    }
  }

  /** What the budget's other tasks spent per finished episode, and their episodes running now. */
  private othersOf(key: string, ledger: BudgetLedger, task: string): Pick<BudgetFacts, 'others' | 'running'> {
    const namespace = key.split('/')[0] as string;
    const running = [...(this.running.get(key) ?? [])]
      .filter(([name]) => name !== task)
      .map(([name, e]) => runningAt(e, name, this.liveSpend?.({ namespace, name })));
    const others = { costUSD: 0, tokens: 0, episodes: 0 };
    for (const t of ledger.tasks) {
      if (t.task === task) continue;
      others.costUSD += t.costUSD;
      others.tokens += t.tokens;
      others.episodes += t.episodes;
    }
    // The ledger counts an episode when it starts; one still running has no cost yet.
    others.episodes = Math.max(0, others.episodes - running.length);
    return { others, running };
  }

  private estimate(task: DesiredTask, key: string, ledger: BudgetLedger, status: AgentTaskStatus) {
    const facts = { ...this.othersOf(key, ledger, task.name), declaredUSD: task.spec?.limits.expectedEpisodeCostUSD };
    const { usd, tokens } = expectedEpisode(status, facts);
    return { usd, tokens };
  }

  /** Records the task's running episode (undefined: none); an episode's end wakes the tasks the budget holds. */
  private setRunning(key: string, task: DesiredTask, episode: RunningEpisode | undefined): void {
    let tasks = this.running.get(key);
    const ended = tasks?.get(task.name);
    if (episode) {
      if (!tasks) this.running.set(key, (tasks = new Map()));
      tasks.set(task.name, episode);
    } else tasks?.delete(task.name);
    // Its cost is now on record (the next episode, if one started at once, counts at its own estimate).
    if (ended && ended.number !== episode?.number && (this.held.get(key)?.size ?? 0) > 0) this.changed(task.namespace);
  }

  /** The task is gone: it holds no budget's attention any more (its spend stays in the windows). */
  forgetTask(task: Pick<DesiredTask, 'namespace' | 'name'>): void {
    for (const key of this.held.keys()) if (key.startsWith(`${task.namespace}/`)) this.setHeld(key, task.name, false);
    for (const [key, tasks] of this.running) if (key.startsWith(`${task.namespace}/`)) tasks.delete(task.name);
  }

  /** Writes the status of every budget that changed, one write at a time; a failed write stays dirty and throws. */
  flush(): Promise<void> {
    const run = this.writing.then(() => this.writeDirty());
    this.writing = run.catch(() => undefined);
    return run;
  }

  private async writeDirty(): Promise<void> {
    const now = this.clock.now();
    for (const budget of this.store.list()) {
      if (!this.dirty.has(budget.key)) continue;
      this.dirty.delete(budget.key);
      const status = this.statusOf(budget, now);
      try {
        await this.store.write(budget, status);
      } catch (err) {
        this.dirty.add(budget.key);
        throw err;
      }
    }
  }

  statusOf(budget: DesiredBudget, now: Date): AgentBudgetStatus {
    const held = [...(this.held.get(budget.key) ?? [])].sort();
    const spec = budget.spec;
    if (!spec) {
      return AgentBudgetStatusSchema.parse({
        ...this.store.read(budget),
        message: `invalid spec: ${budget.specError ?? 'unknown error'}; this budget holds nothing`,
        tasksHeld: 0,
        heldTasks: [],
        updatedAt: now.toISOString(),
        observedGeneration: budget.generation,
      });
    }
    const ledger = prune(this.ledger(budget), spec.window, now);
    this.ledgers.set(budget.key, ledger);
    const { spend, starts } = windowEntries(ledger, spec.window);
    const spentUSD = spend.reduce((s, e) => s + e.usd, 0);
    const spentTokens = spend.reduce((s, e) => s + e.tokens, 0);
    const expiries = spend.map((e) => e.expiresAtMs).filter((t): t is number => t !== undefined);
    const status: AgentBudgetStatus = {
      window: spec.window,
      spentUSD: roundUSD(spentUSD),
      spentTokens,
      remainingUSD: roundUSD(Math.max(0, spec.limitUSD - spentUSD)),
      remainingTokens: spec.maxTokens !== undefined ? Math.max(0, spec.maxTokens - spentTokens) : undefined,
      episodesLastHour: starts.reduce((s, e) => s + e.episodes, 0),
      windowFreesAt: expiries.length > 0 ? new Date(Math.min(...expiries)).toISOString() : undefined,
      tasksHeld: held.length,
      heldTasks: held.slice(0, HELD_NAMES_SHOWN),
      updatedAt: now.toISOString(),
      observedGeneration: budget.generation,
      ledger,
    };
    this.metrics?.set(budget.key, budget.namespace, budget.name, status);
    return status;
  }

  private ledger(budget: DesiredBudget): BudgetLedger {
    let ledger = this.ledgers.get(budget.key);
    if (!ledger) {
      const recorded = this.store.read(budget);
      ledger = BudgetLedgerSchema.parse(recorded?.ledger ?? {});
      this.ledgers.set(budget.key, ledger);
      if (!this.held.has(budget.key)) this.held.set(budget.key, new Set(recorded?.heldTasks ?? []));
    }
    return ledger;
  }

  private setHeld(key: string, task: string, held: boolean): void {
    let names = this.held.get(key);
    if (held === (names?.has(task) ?? false)) return;
    if (!names) this.held.set(key, (names = new Set()));
    if (held) names.add(task);
    else names.delete(task);
    this.dirty.add(key);
  }
}

function counted(
  ledger: BudgetLedger,
  task: string,
): { costUSD: number; tokens: number; episodes: number } | undefined {
  const entry = ledger.tasks.find((t) => t.task === task);
  return entry && { costUSD: entry.costUSD, tokens: entry.tokens, episodes: entry.episodes };
}

function countedOf(status: AgentTaskStatus): { costUSD: number; tokens: number; episodes: number } {
  return { costUSD: status.costUSD, tokens: totalTokens(status.tokens), episodes: status.episodes };
}
