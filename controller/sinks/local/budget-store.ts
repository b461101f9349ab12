// AgentBudgets locally: their specs come from the spec directory, their status (ledger included) lives in
// STATE/budgets/NAMESPACE/NAME.json, written atomically like task status, so window spend survives a restart.
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { budgetPath, budgetsDir } from '../../util/state-layout.ts';
import type { Logger } from 'pino';
import { AgentBudgetStatusSchema } from '../../api/agent-budget.ts';
import type { AgentBudgetStatus } from '../../api/agent-budget.ts';
import type { BudgetStore, DesiredBudget } from '../../core/budget-book.ts';
import type { LoadedSpecs } from '../../sources/local/spec-files.ts';
import { writeFileAtomic } from '../../util/atomic-write.ts';
import { storeFullError } from './file-status.ts';

interface LocalBudget extends DesiredBudget {
  specHash: string;
}

export class LocalBudgetStore implements BudgetStore {
  readonly root: string;
  private budgets = new Map<string, LocalBudget>();
  private readonly statuses = new Map<string, AgentBudgetStatus>();
  private readonly listeners: Array<(key: string) => void> = [];
  private readonly logger: Logger;

  private readonly stateDir: string;

  constructor(stateDir: string, logger: Logger) {
    this.stateDir = stateDir;
    this.root = budgetsDir(stateDir);
    this.logger = logger;
  }

  pathFor(namespace: string, name: string): string {
    return budgetPath(this.stateDir, namespace, name);
  }

  /** Reads every recorded budget status; a file that does not parse is logged and left alone (its budget starts a new ledger). */
  async load(): Promise<void> {
    const namespaces = await readdir(this.root).catch(() => [] as string[]);
    for (const ns of namespaces) {
      for (const file of await readdir(join(this.root, ns)).catch(() => [] as string[])) {
        if (!file.endsWith('.json')) continue;
        const path = join(this.root, ns, file);
        try {
          const parsed = AgentBudgetStatusSchema.parse(JSON.parse(await readFile(path, 'utf8')).status);
          this.statuses.set(`${ns}/${file.slice(0, -5)}`, parsed);
        } catch (err) {
          this.logger.error({ file: path, err: String(err) }, 'unreadable AgentBudget status; its ledger starts over');
        }
      }
    }
  }

  /** A new view of the spec directory: budgets added, edited or removed are announced. */
  set(loaded: LoadedSpecs): void {
    const before = this.budgets;
    const next = new Map<string, LocalBudget>();
    for (const [key, b] of loaded.budgets) {
      const old = before.get(key);
      next.set(
        key,
        old && old.specHash === b.specHash
          ? old
          : {
              key,
              namespace: b.namespace,
              name: b.name,
              generation: 1,
              spec: b.spec,
              specError: b.errors.join('; ') || undefined,
              specHash: b.specHash,
            },
      );
    }
    this.budgets = next;
    for (const key of new Set([...before.keys(), ...next.keys()]))
      if (before.get(key) !== next.get(key)) for (const l of this.listeners) l(key);
  }

  list(): Iterable<DesiredBudget> {
    return this.budgets.values();
  }

  read(budget: DesiredBudget): AgentBudgetStatus | undefined {
    return this.statuses.get(budget.key);
  }

  async write(budget: DesiredBudget, status: AgentBudgetStatus): Promise<void> {
    this.statuses.set(budget.key, status);
    const record = {
      apiVersion: 'episodic.dev/v1alpha1',
      kind: 'AgentBudget',
      namespace: budget.namespace,
      name: budget.name,
      status,
    };
    await writeFileAtomic(this.pathFor(budget.namespace, budget.name), `${JSON.stringify(record, null, 2)}\n`).catch(
      (err: unknown) => {
        throw storeFullError(err, this.stateDir) ?? err; // a full disk is said once, by the status sink
      },
    );
  }

  subscribe(onChange: (key: string) => void): void {
    this.listeners.push(onChange);
  }
}
