// AgentBudgets on a cluster: desired state from an informer, status (ledger included) written through the
// /status subresource with a merge patch. The controller never writes a budget's spec or metadata.
import type { Logger } from 'pino';
import { AgentBudgetStatusSchema, BUDGET_PLURAL, validateBudgetSpec } from '../../api/agent-budget.ts';
import type { AgentBudgetStatus } from '../../api/agent-budget.ts';
import { GROUP, VERSION } from '../../api/agent-task.ts';
import type { BudgetStore, DesiredBudget } from '../../core/budget-book.ts';
import type { Informer } from '../../kube/informer.ts';
import type { CustomObject } from '../../kube/objects.ts';
import { objectKey } from '../../kube/informer.ts';
import type { KubeClient } from '../../kube/kube-client.ts';

function budgetPath(namespace: string, name: string, subresource = ''): string {
  return `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${BUDGET_PLURAL}/${name}${subresource ? `/${subresource}` : ''}`;
}

export class AgentBudgetStore implements BudgetStore {
  private readonly budgets: Informer<CustomObject>;
  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly parsed = new WeakMap<CustomObject, DesiredBudget>();
  /** What this controller wrote last: the informer may not have seen it yet. */
  private readonly written = new Map<string, AgentBudgetStatus>();

  constructor(opts: { budgets: Informer<CustomObject>; client: KubeClient; log: Logger }) {
    this.budgets = opts.budgets;
    this.client = opts.client;
    this.log = opts.log;
  }

  *list(): Iterable<DesiredBudget> {
    for (const obj of this.budgets.list()) yield this.desired(obj);
  }

  read(budget: DesiredBudget): AgentBudgetStatus | undefined {
    const mine = this.written.get(budget.key);
    if (mine) return mine;
    const parsed = AgentBudgetStatusSchema.safeParse(this.budgets.get(budget.key)?.status ?? {});
    if (!parsed.success)
      this.log.warn({ budget: budget.key }, 'AgentBudget status does not parse; its ledger starts over');
    return parsed.success ? parsed.data : undefined;
  }

  async write(budget: DesiredBudget, status: AgentBudgetStatus): Promise<void> {
    this.written.set(budget.key, status);
    // Cleared fields must go: a merge patch keeps what it does not name, so absent means null here.
    const body = { status: { remainingTokens: null, windowFreesAt: null, message: null, ...status } };
    await this.client.mergePatch(budgetPath(budget.namespace, budget.name, 'status'), body);
  }

  subscribe(onChange: (key: string) => void): void {
    this.budgets.on({
      // Status writes (ours) change no spec: only a new generation is news.
      add: (obj) => onChange(objectKey(obj)),
      update: (old, obj) => {
        if (old.metadata.generation !== obj.metadata.generation) onChange(objectKey(obj));
      },
      delete: (obj) => {
        this.written.delete(objectKey(obj));
        onChange(objectKey(obj));
      },
    });
  }

  private desired(obj: CustomObject): DesiredBudget {
    let budget = this.parsed.get(obj);
    if (budget) return budget;
    const spec = validateBudgetSpec(obj.spec);
    budget = {
      key: objectKey(obj),
      namespace: obj.metadata.namespace as string,
      name: obj.metadata.name,
      generation: obj.metadata.generation ?? 0,
      spec: spec.ok ? spec.spec : undefined,
      specError: spec.ok ? undefined : spec.errors.join('; '),
    };
    this.parsed.set(obj, budget);
    return budget;
  }
}
