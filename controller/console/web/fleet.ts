// The Fleet page: a row per task, what needs a person first (or sorted by any column), searched by name,
// filtered, grouped by parent or by trigger (collapsible), and paginated so 10,000 tasks stay quick.
import { h, usd } from './dom.ts';
import { PAGE_ROWS as PAGE, phaseRank, summaryOf } from '../fleet-order.ts';
import type { FleetSummary } from '../fleet-order.ts';
import { COLUMNS, comparator } from './fleet-columns.ts';
import type { Sort } from './fleet-columns.ts';
import type { TaskRow } from './types.ts';

const SEARCH_DEBOUNCE_MS = 150;

export interface FleetFilter {
  phase: string;
  namespace: string;
  label: string;
  page: number;
  search?: string;
  sort?: Sort;
  group?: '' | 'parent' | 'trigger';
  /** Parents or triggers whose tasks are folded away. */
  collapsed?: string[];
}

export function matches(row: TaskRow, f: FleetFilter): boolean {
  if (f.phase && row.phase !== f.phase) return false;
  if (f.namespace && row.namespace !== f.namespace) return false;
  if (f.search && !row.key.toLowerCase().includes(f.search.toLowerCase())) return false;
  if (f.label) {
    const [k, v] = f.label.split('=', 2).map((s) => s.trim());
    if (!k || !(k in row.labels) || (v !== undefined && row.labels[k] !== v)) return false;
  }
  return true;
}

/** A line of the table: a task at a depth (grouped by parent), or a group's heading (grouped by trigger). */
type Line = { row: TaskRow; depth: number; children: number } | { group: string; count: number };

/** `partial`: the rows are only the server's first page (the whole list is on its way); its summary is of all. */
export function renderFleet(
  rows: TaskRow[],
  filter: FleetFilter,
  onFilter: (f: FleetFilter) => void,
  partial?: FleetSummary,
): HTMLElement {
  const now = Date.now();
  const summary = partial ?? summaryOf(rows);
  const shown = rows.filter((r) => matches(r, filter)).sort(comparator(filter.sort, now));
  const lines = linesOf(shown, filter);
  const pages = Math.max(1, Math.ceil(lines.length / PAGE));
  const page = Math.min(filter.page, pages - 1);
  const chips = h(
    'div',
    { className: 'chips', data: { testid: 'counts' } },
    h('span', { data: { testid: 'total' } }, `${summary.total} tasks`),
    h('span', { data: { testid: 'spend' } }, `spent ${usd(summary.spendUSD)}`),
    ...Object.entries(summary.phases)
      .sort(([a], [b]) => phaseRank(a) - phaseRank(b))
      .map(([phase, n]) => h('span', { className: `phase-${phase}`, data: { phaseCount: phase } }, `${phase} ${n}`)),
  );
  const body = lines.slice(page * PAGE, (page + 1) * PAGE).map((l) => lineElement(l, filter, onFilter, now));
  return h(
    'div',
    {},
    chips,
    filters(rows, filter, onFilter),
    shown.length === 0
      ? h('p', { data: { testid: 'fleet-empty' } }, rows.length === 0 ? 'none' : 'none match')
      : h(
          'div',
          { className: 'scroll' },
          h('table', { data: { testid: 'fleet' } }, header(filter, onFilter), h('tbody', {}, ...body)),
        ),
    partial
      ? h(
          'p',
          { data: { testid: 'loading-rest' } },
          `the first ${rows.length} of ${partial.total} shown; loading the rest…`,
        )
      : pager(page, pages, shown.length, (p) => onFilter({ ...filter, page: p })),
  );
}

function linesOf(shown: TaskRow[], f: FleetFilter): Line[] {
  const collapsed = new Set(f.collapsed ?? []);
  if (f.group === 'trigger') {
    const groups = new Map<string, TaskRow[]>();
    for (const r of shown) {
      const g = r.trigger ?? '';
      const list = groups.get(g);
      if (list) list.push(r);
      else groups.set(g, [r]);
    }
    const keys = [...groups.keys()].sort((a, b) => (a === '' ? 1 : b === '' ? -1 : a < b ? -1 : 1));
    return keys.flatMap((g) => {
      const list = groups.get(g) ?? [];
      const head: Line = { group: g, count: list.length };
      return collapsed.has(g) ? [head] : [head, ...list.map((row) => ({ row, depth: 0, children: 0 }))];
    });
  }
  if (f.group !== 'parent') return shown.map((row) => ({ row, depth: 0, children: 0 }));
  // By parent: each task under the one that spawned it (when that one is shown), in the chosen order.
  const keys = new Set(shown.map((r) => r.key));
  const kids = new Map<string, TaskRow[]>();
  for (const r of shown)
    if (r.parent && keys.has(r.parent)) {
      const list = kids.get(r.parent);
      if (list) list.push(r);
      else kids.set(r.parent, [r]);
    }
  const out: Line[] = [];
  const visit = (row: TaskRow, depth: number) => {
    const children = kids.get(row.key) ?? [];
    out.push({ row, depth, children: children.length });
    if (depth < 8 && !collapsed.has(row.key)) for (const c of children) visit(c, depth + 1);
  };
  for (const r of shown) if (!r.parent || !keys.has(r.parent)) visit(r, 0);
  return out;
}

function lineElement(l: Line, f: FleetFilter, onFilter: (f: FleetFilter) => void, now: number): HTMLElement {
  if ('group' in l) {
    const label = l.group ? `trigger ${l.group}` : 'no trigger';
    const td = h('td', {}, toggle(l.group, f, onFilter), ` ${label} (${l.count})`) as HTMLTableCellElement;
    td.colSpan = COLUMNS.length;
    return h('tr', { className: 'group', data: { group: l.group } }, td);
  }
  const r = l.row;
  const cells = COLUMNS.map((c) => c.cell(r, now));
  const name = cells[0] as HTMLElement;
  name.style.paddingLeft = `${0.6 + l.depth * 1.4}em`;
  if (l.children > 0) name.prepend(toggle(r.key, f, onFilter), ' ');
  return h('tr', { data: { key: r.key, phase: r.phase, depth: String(l.depth) } }, ...cells);
}

/** ▾ / ▸: folds a parent's children or a trigger's tasks away, and back. */
function toggle(id: string, f: FleetFilter, onFilter: (f: FleetFilter) => void): HTMLElement {
  const collapsed = new Set(f.collapsed ?? []);
  const folded = collapsed.has(id);
  return h(
    'button',
    {
      className: 'fold',
      title: folded ? 'show' : 'fold away',
      data: { fold: id, folded: String(folded) },
      onclick: () => {
        if (folded) collapsed.delete(id);
        else collapsed.add(id);
        onFilter({ ...f, collapsed: [...collapsed] });
      },
    },
    folded ? '▸' : '▾',
  );
}

function header(f: FleetFilter, onFilter: (f: FleetFilter) => void): HTMLElement {
  return h(
    'thead',
    {},
    h(
      'tr',
      {},
      ...COLUMNS.map((c) => {
        const active = f.sort?.column === c.id;
        const th = h(
          'th',
          {
            className: 'sortable',
            title: `sort by ${c.title}`,
            data: { sort: c.id },
            onclick: () =>
              onFilter({ ...f, page: 0, sort: { column: c.id, descending: active ? !f.sort?.descending : false } }),
          },
          c.title,
          active ? (f.sort?.descending ? ' ↓' : ' ↑') : '',
        );
        th.setAttribute('aria-sort', active ? (f.sort?.descending ? 'descending' : 'ascending') : 'none');
        return th;
      }),
    ),
  );
}

function filters(rows: TaskRow[], f: FleetFilter, onFilter: (f: FleetFilter) => void): HTMLElement {
  const phases = [...new Set(rows.map((r) => r.phase))].sort();
  const namespaces = [...new Set(rows.map((r) => r.namespace))].sort();
  const phase = select('phase', ['', ...phases], f.phase, (v) => onFilter({ ...f, phase: v, page: 0 }));
  const ns = select('namespace', ['', ...namespaces], f.namespace, (v) => onFilter({ ...f, namespace: v, page: 0 }));
  const group = select('group', ['', 'parent', 'trigger'], f.group ?? '', (v) =>
    onFilter({ ...f, group: v as FleetFilter['group'], page: 0 }),
  );
  const label = h('input', { title: 'label: key or key=value' }) as HTMLInputElement;
  label.placeholder = 'label key=value';
  label.value = f.label;
  label.addEventListener('change', () => onFilter({ ...f, label: label.value, page: 0 }));
  return h('div', { className: 'filters' }, searchBox(f, onFilter), phase, ns, label, group);
}

let searchTimer: ReturnType<typeof setTimeout> | undefined;

/** Search by name as you type: the table follows once typing pauses (debounced). */
function searchBox(f: FleetFilter, onFilter: (f: FleetFilter) => void): HTMLElement {
  const input = h('input', { title: 'search by name', data: { filter: 'search' } }) as HTMLInputElement;
  input.type = 'search';
  input.placeholder = 'search name';
  input.value = f.search ?? '';
  input.addEventListener('input', () => {
    // Kept at once (a live re-render in between shows what was typed), applied once typing pauses.
    f.search = input.value;
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => onFilter({ ...f, page: 0 }), SEARCH_DEBOUNCE_MS);
  });
  return input;
}

function select(name: string, values: string[], current: string, onChange: (v: string) => void): HTMLElement {
  const el = h('select', { title: name, data: { filter: name } }) as HTMLSelectElement;
  for (const v of values) {
    const o = h(
      'option',
      {},
      v ? (name === 'group' ? `group by ${v}` : v) : name === 'group' ? 'no grouping' : `all ${name}s`,
    ) as HTMLOptionElement;
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
