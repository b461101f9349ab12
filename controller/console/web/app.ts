// The console page: a hash router (#/, #/task/NS/NAME, #/triggers, #/budgets) over the JSON API, kept live by SSE.
import { api, h, usd } from './dom.ts';
import { renderFleet } from './fleet.ts';
import { FIRST_PAGE_PATH } from '../fleet-order.ts';
import type { FleetSummary } from '../fleet-order.ts';
import type { FleetFilter } from './fleet.ts';
import { TaskPage } from './task.ts';
import { triggersPage } from './triggers.ts';
import type { BudgetView, ConsoleEvent, TaskRow } from './types.ts';
import { budgetChart, Charts } from './charts.ts';

const main = document.getElementById('main') as HTMLElement;
const live = document.getElementById('live') as HTMLElement;
const rows = new Map<string, TaskRow>();
let filter: FleetFilter = { phase: '', namespace: '', label: '', page: 0 };
let taskPage: TaskPage | undefined;
let scheduled = false;
const budgetCharts = new Charts();

function route(): string[] {
  return location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
}

async function show(): Promise<void> {
  const [page, ns, name] = route();
  taskPage = undefined;
  budgetCharts.destroy();
  if (page === 'task' && ns && name) {
    taskPage = new TaskPage(ns, name);
    main.replaceChildren(taskPage.root);
    await taskPage.refresh();
  } else if (page === 'budgets') {
    main.replaceChildren(await budgets());
  } else if (page === 'triggers') {
    main.replaceChildren(await triggersPage(ns && name ? `${ns}/${name}` : undefined));
    if (ns && name) main.querySelector('.trigger.selected')?.scrollIntoView();
  } else renderFleetNow();
  document.body.dataset.rendered = page || 'fleet';
}

function renderFleetNow(): void {
  // The search box is drawn anew with the table: typing goes on where it was.
  const typing = document.activeElement as HTMLInputElement | null;
  const caret = typing?.dataset.filter === 'search' ? typing.selectionStart : null;
  main.replaceChildren(
    renderFleet(
      [...rows.values()],
      filter,
      (f) => {
        filter = f;
        renderFleetNow();
      },
      partial,
    ),
  );
  if (caret !== null) {
    const search = main.querySelector<HTMLInputElement>('input[data-filter=search]');
    search?.focus();
    search?.setSelectionRange(caret, caret);
  }
  document.body.dataset.rendered = 'fleet';
}

/** At most one render per frame, however many events arrive. */
function scheduleRender(): void {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    if (taskPage) void taskPage.refresh();
    else if (route()[0] !== 'budgets' && route()[0] !== 'triggers') renderFleetNow();
  });
}

async function budgets(): Promise<HTMLElement> {
  const { items } = await api<{ items: BudgetView[] }>('/api/budgets');
  if (items.length === 0) return h('p', { data: { testid: 'budgets' } }, 'none');
  const head = ['Budget', 'Window', 'Spent / limit', 'Frees at', 'Tasks held', 'Message'];
  const charts = items.flatMap((b) => {
    const spend = { name: `${b.namespace}/${b.name}`, window: b.window, limitUSD: b.limitUSD };
    const buckets = b.status?.ledger.buckets ?? [];
    return [
      budgetChart(budgetCharts, { ...spend, buckets }, 'hour'),
      budgetChart(budgetCharts, { ...spend, buckets }, 'day'),
    ];
  });
  return h('div', {}, budgetTable(items, head), h('section', {}, h('h3', {}, 'Spend per hour and per day'), ...charts));
}

function budgetTable(items: BudgetView[], head: string[]): HTMLElement {
  return h(
    'table',
    { data: { testid: 'budgets' } },
    h('tr', {}, ...head.map((c) => h('th', {}, c))),
    ...items.map((b) =>
      h(
        'tr',
        {},
        h('td', {}, `${b.namespace}/${b.name}`),
        h('td', {}, b.window ?? ''),
        h('td', {}, `${usd(b.status?.spentUSD ?? 0)} / ${usd(b.limitUSD)}`),
        h('td', {}, b.status?.windowFreesAt ?? ''),
        h(
          'td',
          {},
          `${b.status?.tasksHeld ?? 0}${b.status?.heldTasks.length ? `: ${b.status.heldTasks.join(', ')}` : ''}`,
        ),
        h('td', { className: 'msg' }, b.status?.message ?? ''),
      ),
    ),
  );
}

type TasksEvent = Extract<ConsoleEvent, { type: 'tasks' }> & { seq: number };
// The snapshot's event number: events at or below it are already in it. Until it comes, events wait.
let snapshotSeq: number | undefined;
let waiting: TasksEvent[] = [];

function applyTasks(event: TasksEvent): void {
  if (snapshotSeq === undefined) {
    waiting.push(event);
    return;
  }
  if (event.seq <= snapshotSeq) return;
  for (const row of event.rows) rows.set(row.key, row);
  if (!taskPage || event.rows.some((r) => r.key === taskPage?.key)) scheduleRender();
  document.body.dataset.updates = String(Number(document.body.dataset.updates ?? 0) + 1);
}

// Until the whole list has come: the summary of all rows, while `rows` holds only the first page.
let partial: FleetSummary | undefined;

/** At start: the first page alone (a small answer the HTML preloaded), drawn before the whole list is read. */
async function firstPage(): Promise<void> {
  // As the preload asked for it (no extra header), so the browser hands over that response.
  const res = await fetch(FIRST_PAGE_PATH);
  if (!res.ok) return;
  const first = (await res.json()) as { items: TaskRow[]; summary: FleetSummary };
  for (const row of first.items) rows.set(row.key, row);
  if (first.items.length < first.summary.total) partial = first.summary;
  renderFleetNow();
}

/** Every row read again (at start and after a reconnect, when events may have been missed). */
async function resync(): Promise<void> {
  snapshotSeq = undefined;
  const { items, seq } = await api<{ items: TaskRow[]; seq: number }>('/api/tasks');
  partial = undefined;
  rows.clear();
  for (const row of items) rows.set(row.key, row);
  snapshotSeq = seq;
  const held = waiting;
  waiting = [];
  for (const event of held) applyTasks(event);
  scheduleRender();
}

function connect(): void {
  const source = new EventSource('/api/events');
  let hellos = 0;
  source.addEventListener('hello', () => {
    live.textContent = 'live';
    document.body.dataset.live = 'true';
    if (hellos++ > 0) void resync();
  });
  source.addEventListener('tasks', (e) => applyTasks(JSON.parse((e as MessageEvent<string>).data) as TasksEvent));
  source.addEventListener('log', (e) => {
    const event = JSON.parse((e as MessageEvent<string>).data) as Extract<ConsoleEvent, { type: 'log' }>;
    if (taskPage?.key === event.key) taskPage.logGrew(event.episode);
  });
  source.onerror = () => {
    live.textContent = 'reconnecting…';
    document.body.dataset.live = 'false';
  };
}

async function start(): Promise<void> {
  connect();
  // Drawn before the whole list is asked for: reading 10,000 rows would hold the page's thread.
  if (!route()[0]) await firstPage().catch(() => {});
  await resync();
  window.addEventListener('hashchange', () => void show());
  await show();
}

void start();
