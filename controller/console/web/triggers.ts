// The Triggers page: each trigger's source, last and next poll or tick, counts, its tasks (linked), held items,
// the last error and its hook URL when hooks are served. Every field is text; item links are http(s) only.
import { api, externalLink, h } from './dom.ts';
import { when } from './fleet-columns.ts';
import type { TriggerView } from '../trigger-views.ts';

export async function triggersPage(selected?: string): Promise<HTMLElement> {
  const { items } = await api<{ items: TriggerView[] }>('/api/triggers');
  if (items.length === 0)
    return h('section', { data: { testid: 'triggers' } }, h('h3', {}, 'Triggers'), h('p', {}, 'none'));
  return h('div', { data: { testid: 'triggers' } }, ...items.map((t) => triggerCard(t, t.key === selected)));
}

function triggerCard(t: TriggerView, selected: boolean): HTMLElement {
  // A schedule's pass is a tick (its next one is recorded as nextPollAt); a forge or hook trigger polls.
  const facts: Array<[string, Node | string]> = t.ticks
    ? [
        ['source', t.source],
        ['last tick', when(t.lastTick) || t.lastTick || 'never'],
        ['next tick', when(t.nextPollAt) || '—'],
      ]
    : [
        ['source', t.source],
        ['last poll', when(t.lastPollAt) || 'never'],
        ['next poll', when(t.nextPollAt) || '—'],
      ];
  facts.push(['items seen', String(t.itemsSeen)], ['tasks active / created', `${t.tasksActive} / ${t.tasksCreated}`]);
  if (t.rateLimitedUntil) facts.push(['rate limited until', when(t.rateLimitedUntil)]);
  facts.push(['last error', t.lastError ?? 'none']);
  if (t.hookUrl) facts.push(['hook URL', h('code', { data: { testid: 'hook-url' } }, t.hookUrl)]);
  if (t.problems.length) facts.push(['spec problems', t.problems.join('\n')]);
  const card = h(
    'section',
    { className: selected ? 'trigger selected' : 'trigger', data: { trigger: t.key } },
    h('h3', {}, t.key, t.suspended ? ' (suspended)' : ''),
    h(
      'table',
      { className: 'facts' },
      ...facts.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', { className: 'msg', data: { fact: k } }, v))),
    ),
    h('h4', {}, `Tasks (${t.tasks.length + t.moreTasks})`),
    t.tasks.length
      ? h(
          'ul',
          { data: { testid: 'trigger-tasks' } },
          ...t.tasks.map((task) =>
            h(
              'li',
              {},
              h('a', { route: `task/${task.namespace}/${task.name}` }, task.name),
              ' ',
              h('span', { className: `phase-${task.phase}` }, task.phase),
            ),
          ),
          t.moreTasks ? h('li', {}, `and ${t.moreTasks} more`) : null,
        )
      : h('p', { data: { testid: 'trigger-tasks' } }, 'none'),
    h('h4', {}, `Held items (${t.held.length}${t.heldOverflow ? ` and ${t.heldOverflow} lost` : ''})`),
    t.held.length
      ? h(
          'ul',
          { data: { testid: 'held' } },
          ...t.held.map((i) => h('li', {}, externalLink(i.url, `#${i.number}`, 'held-item'), ' ', i.title)),
        )
      : h('p', { data: { testid: 'held' } }, 'none'),
  );
  return card;
}
