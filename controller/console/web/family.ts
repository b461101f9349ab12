// A task's origin and family on its page: links up to the task that spawned it, the trigger that made it
// and the forge item (http(s) only) or tick it was made for, and what it spawned as a tree with phase and cost.
import { externalLink, h, usd } from './dom.ts';
import { when } from './fleet-columns.ts';
import type { TaskDetail } from './types.ts';
import type { FamilyNode, TaskRow } from '../views.ts';

function taskLink(r: Pick<TaskRow, 'namespace' | 'name' | 'key'>, testid: string): HTMLElement {
  return h(
    'a',
    { route: `task/${r.namespace}/${r.name}`, data: { testid } },
    r.namespace === 'default' ? r.name : r.key,
  );
}

function keyParts(key: string): { namespace: string; name: string; key: string } {
  const [namespace = '', name = ''] = key.split('/');
  return { namespace, name, key };
}

export function originSection(d: TaskDetail): HTMLElement {
  const r = d.row;
  const facts: Array<[string, Node | string]> = [];
  if (r.parent) facts.push(['spawned by', taskLink(d.family?.parent ?? keyParts(r.parent), 'parent')]);
  if (r.trigger)
    facts.push(['made by trigger', h('a', { route: `triggers/${r.trigger}`, data: { testid: 'trigger' } }, r.trigger)]);
  if (r.item)
    facts.push([
      'for item',
      r.item.url
        ? externalLink(r.item.url, `#${r.item.number}`, 'item')
        : h('span', { data: { testid: 'item' } }, `#${r.item.number}`),
    ]);
  if (r.tick) facts.push(['for tick', when(r.tick)]);
  const family = d.family;
  const children = family?.children ?? [];
  return h(
    'section',
    { data: { testid: 'family' } },
    h('h3', {}, 'Origin and family'),
    facts.length
      ? h(
          'table',
          { data: { testid: 'origin' } },
          ...facts.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, v))),
        )
      : h('p', { data: { testid: 'origin' } }, 'made by a person (no parent task, no trigger)'),
    h('h4', {}, `Children (${countOf(children)}${family?.more ? ` and ${family.more} more` : ''})`),
    children.length ? tree(children) : h('p', { data: { testid: 'children' } }, 'none'),
  );
}

function countOf(nodes: FamilyNode[]): number {
  return nodes.reduce((n, c) => n + 1 + countOf(c.children), 0);
}

function tree(nodes: FamilyNode[]): HTMLElement {
  return h(
    'ul',
    { className: 'tree', data: { testid: 'children' } },
    ...nodes.map((n) =>
      h(
        'li',
        { data: { child: n.row.key } },
        taskLink(n.row, 'child'),
        ' ',
        h('span', { className: `phase-${n.row.phase}`, data: { testid: 'child-phase' } }, n.row.phase),
        ` · ${n.row.episodes} episode${n.row.episodes === 1 ? '' : 's'} · ${usd(n.row.costUSD)}`,
        n.children.length ? tree(n.children) : null,
      ),
    ),
  );
}
