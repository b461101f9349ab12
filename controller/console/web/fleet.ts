// The Fleet page: a row per task, what needs a person first, filtered and paginated so 10,000 tasks stay quick.
import { ago, externalLink, h, usd } from './dom.ts';
import type { TaskRow } from './types.ts';

const PAGE = 100;
// What needs a person first, then what is moving, then what is done.
const RANK: Record<string, number> = {
  NeedsReview: 0,
  Failed: 1,
  Running: 3,
  Waiting: 4,
  Pending: 5,
  Suspended: 6,
  Succeeded: 7,
  Skipped: 8,
};

export function rank(row: TaskRow): number {
  if (row.breaker === 'HalfOpen' && (RANK[row.phase] ?? 9) > 2) return 2;
  return RANK[row.phase] ?? 9;
}

export interface FleetFilter {
  phase: string;
  namespace: string;
  label: string;
  page: number;
}

export function matches(row: TaskRow, f: FleetFilter): boolean {
  if (f.phase && row.phase !== f.phase) return false;
  if (f.namespace && row.namespace !== f.namespace) return false;
  if (f.label) {
    const [k, v] = f.label.split('=', 2).map((s) => s.trim());
    if (!k || !(k in row.labels) || (v !== undefined && row.labels[k] !== v)) return false;
  }
  return true;
}

export function renderFleet(rows: TaskRow[], filter: FleetFilter, onFilter: (f: FleetFilter) => void): HTMLElement {
  const counts = new Map<string, number>();
  let spend = 0;
  for (const r of rows) {
    counts.set(r.phase, (counts.get(r.phase) ?? 0) + 1);
    spend += r.costUSD;
  }
  const shown = rows.filter((r) => matches(r, filter)).sort((a, b) => rank(a) - rank(b) || a.key.localeCompare(b.key));
  const pages = Math.max(1, Math.ceil(shown.length / PAGE));
  const page = Math.min(filter.page, pages - 1);
  const chips = h(
    'div',
    { className: 'chips', data: { testid: 'counts' } },
    h('span', { data: { testid: 'total' } }, `${rows.length} tasks`),
    h('span', { data: { testid: 'spend' } }, `spent ${usd(spend)}`),
    ...[...counts]
      .sort(([a], [b]) => (RANK[a] ?? 9) - (RANK[b] ?? 9))
      .map(([phase, n]) => h('span', { className: `phase-${phase}`, data: { phaseCount: phase } }, `${phase} ${n}`)),
  );
  return h(
    'div',
    {},
    chips,
    filters(rows, filter, onFilter),
    h(
      'table',
      { data: { testid: 'fleet' } },
      header(),
      h('tbody', {}, ...shown.slice(page * PAGE, (page + 1) * PAGE).map(rowElement)),
    ),
    pager(page, pages, shown.length, (p) => onFilter({ ...filter, page: p })),
  );
}

function header(): HTMLElement {
  const cols = [
    'Name',
    'Phase',
    'Reason',
    'Progress',
    'Step',
    'Episodes',
    'Breaker',
    'Cost / cap',
    'Last progress',
    'PR',
    'Message',
  ];
  return h('thead', {}, h('tr', {}, ...cols.map((c) => h('th', {}, c))));
}

function rowElement(r: TaskRow): HTMLElement {
  const running = r.runningEpisode ? ` (episode ${r.runningEpisode} running)` : '';
  return h(
    'tr',
    { data: { key: r.key, phase: r.phase } },
    h('td', {}, h('a', { route: `task/${r.namespace}/${r.name}` }, r.namespace === 'default' ? r.name : r.key)),
    h('td', { className: `phase-${r.phase}`, data: { testid: 'phase' } }, r.phase),
    h('td', {}, r.reason ?? ''),
    h('td', {}, r.progress ?? ''),
    h('td', {}, r.step ?? ''),
    h('td', {}, `${r.episodes}${r.maxEpisodes ? ` / ${r.maxEpisodes}` : ''}${running}`),
    h('td', { className: `breaker-${r.breaker ?? 'none'}` }, r.breaker ?? ''),
    h('td', { data: { testid: 'cost' } }, `${usd(r.costUSD)}${r.maxCostUSD ? ` / ${usd(r.maxCostUSD)}` : ''}`),
    h('td', {}, ago(r.lastProgressAt)),
    h('td', {}, r.pullRequest ? externalLink(r.pullRequest.url, `#${r.pullRequest.number}`, 'pr') : ''),
    h('td', { className: 'msg' }, r.message ?? ''),
  );
}

function filters(rows: TaskRow[], f: FleetFilter, onFilter: (f: FleetFilter) => void): HTMLElement {
  const phases = [...new Set(rows.map((r) => r.phase))].sort();
  const namespaces = [...new Set(rows.map((r) => r.namespace))].sort();
  const phase = select('phase', ['', ...phases], f.phase, (v) => onFilter({ ...f, phase: v, page: 0 }));
  const ns = select('namespace', ['', ...namespaces], f.namespace, (v) => onFilter({ ...f, namespace: v, page: 0 }));
  const label = h('input', { title: 'label: key or key=value' }) as HTMLInputElement;
  label.placeholder = 'label key=value';
  label.value = f.label;
  label.addEventListener('change', () => onFilter({ ...f, label: label.value, page: 0 }));
  return h('div', { className: 'filters' }, phase, ns, label);
}

function select(name: string, values: string[], current: string, onChange: (v: string) => void): HTMLElement {
  const el = h('select', { title: name, data: { filter: name } }) as HTMLSelectElement;
  for (const v of values) {
    const o = h('option', {}, v || `all ${name}s`) as HTMLOptionElement;
    o.value = v;
    o.selected = v === current;
    el.append(o);
  }
  el.addEventListener('change', () => onChange(el.value));
  return el;
}

function pager(page: number, pages: number, total: number, go: (p: number) => void): HTMLElement {
  const prev = h('button', { onclick: () => go(page - 1) }, '‹ prev') as HTMLButtonElement;
  const next = h('button', { onclick: () => go(page + 1) }, 'next ›') as HTMLButtonElement;
  prev.disabled = page === 0;
  next.disabled = page >= pages - 1;
  return h('div', { className: 'filters' }, prev, `page ${page + 1} of ${pages} (${total} shown)`, next);
}
