// The Task page's pipeline parts (issues 19 and 20, and status.review): the steps with their gate state, the
// task's outputs, the context stack, and per episode its gate runs, ops and outputs note. All of it is agent
// text, shown through h() as text nodes; long values are cut on screen and open whole with a click.
import type { EpisodeRecord } from '../../api/episode-record.ts';
import { h, usd } from './dom.ts';
import type { TaskDetail } from './types.ts';

/** Characters of a value shown before "show all". */
export const SHOWN_MAX = 160;

/** A value cut to SHOWN_MAX with a button that shows it whole (and cuts it again). */
export function bounded(text: string, testid?: string): HTMLElement {
  const el = h('span', { className: 'value', data: testid ? { testid } : {} });
  if (text.length <= SHOWN_MAX) {
    el.append(h('span', {}, text));
    return el;
  }
  const shown = h('span', {}, `${text.slice(0, SHOWN_MAX)}…`);
  const toggle = h('button', { className: 'expand', data: { testid: 'expand' } }, 'show all');
  toggle.addEventListener('click', () => {
    const whole = toggle.textContent === 'show all';
    shown.replaceChildren(whole ? text : `${text.slice(0, SHOWN_MAX)}…`);
    toggle.replaceChildren(whole ? 'show less' : 'show all');
  });
  el.append(shown, ' ', toggle);
  return el;
}

function table(testid: string, columns: string[], rows: HTMLElement[]): HTMLElement {
  return h('table', { data: { testid } }, h('tr', {}, ...columns.map((c) => h('th', {}, c))), ...rows);
}

/** status.steps: one row per step, its gate's fix episodes against the cap the spec gives. */
export function steps(d: TaskDetail): HTMLElement | null {
  const list = d.status.steps;
  if (!list?.length) return null;
  const current = d.status.step?.name;
  const rows = list.map((s) => {
    const max = s.gate ? d.gateLimits?.[s.name]?.[s.gate.name] : undefined;
    const gate = s.gate
      ? `${s.gate.name} failed${s.gate.exitCode === undefined || s.gate.exitCode === null ? '' : ` (exit ${s.gate.exitCode})`} · fix episodes ${s.gate.fixEpisodes}${max === undefined ? '' : `/${max}`}`
      : '';
    return h(
      'tr',
      { className: s.name === current ? 'current' : '', data: { step: s.name } },
      h('td', {}, s.name),
      h('td', { className: `phase-${s.phase}` }, s.phase),
      h('td', {}, s.reason ?? ''),
      h('td', {}, String(s.episodes)),
      h('td', {}, usd(s.costUSD)),
      h('td', { className: 'msg', data: { testid: 'gate' } }, gate),
    );
  });
  return h(
    'section',
    {},
    h('h3', {}, `Steps${d.status.step?.summary ? ` — ${d.status.step.summary}` : ''}`),
    table('steps', ['step', 'phase', 'reason', 'episodes', 'cost', 'gate'], rows),
  );
}

/** status.outputs, and each step's, as key → value. */
export function outputs(d: TaskDetail): HTMLElement | null {
  const rows: HTMLElement[] = [];
  const add = (scope: string, values: Record<string, string> | undefined) => {
    for (const [key, value] of Object.entries(values ?? {}))
      rows.push(
        h(
          'tr',
          { data: { output: key } },
          h('td', {}, scope),
          h('td', {}, key),
          h('td', { className: 'msg' }, bounded(value)),
        ),
      );
  };
  for (const s of d.status.steps ?? []) add(s.name, s.outputs);
  if (!rows.length) add('task', d.status.outputs);
  if (!rows.length) return null;
  return h('section', {}, h('h3', {}, 'Outputs'), table('outputs', ['step', 'key', 'value'], rows));
}

/** The tasks this one created (spawn, forEach items, best-of-N attempts), each a link to its page. */
export function children(d: TaskDetail, namespace: string): HTMLElement | null {
  const kids = d.children ?? [];
  if (!kids.length) return null;
  const rows = kids.map((c) =>
    h(
      'tr',
      { data: { child: c.name } },
      h('td', {}, h('a', { route: `task/${namespace}/${c.name}` }, c.name)),
      h('td', { className: `phase-${c.phase}` }, c.phase),
      h('td', {}, c.reason ?? ''),
      h('td', {}, usd(c.costUSD)),
    ),
  );
  return h(
    'section',
    {},
    h('h3', {}, `Children (${kids.length})`),
    table('children', ['task', 'phase', 'reason', 'cost'], rows),
  );
}

/** status.stack (agent ops): its depth and top frames; an ended episode's ops still to apply. */
export function stack(d: TaskDetail): HTMLElement | null {
  const st = d.status.stack;
  const pending = d.status.pendingOps;
  if (!st && !pending) return null;
  return h(
    'section',
    { data: { testid: 'stack' } },
    h('h3', {}, `Context stack${st ? ` — depth ${st.depth}` : ''}`),
    st ? h('ol', {}, ...st.top.map((frame) => h('li', { className: 'msg' }, bounded(frame)))) : null,
    pending
      ? h('p', {}, `ops of episode ${pending.episode} to apply: ${pending.ops.map((o) => o.op).join(', ')}`)
      : null,
  );
}

type ReviewItem = { text?: unknown; file?: unknown; episode?: unknown };

/** status.review (h/review): its flagged items and new entries; read loosely so a later shape still shows. */
export function review(d: TaskDetail): HTMLElement | null {
  const r = (d.status as { review?: Record<string, unknown> }).review;
  if (!r) return null;
  const items: HTMLElement[] = [];
  for (const [field, value] of Object.entries(r)) {
    if (Array.isArray(value))
      for (const item of value as Array<string | ReviewItem>) items.push(reviewItem(field, item));
    else if (typeof value === 'number' && value > 0) items.push(h('li', {}, `${field}: ${value}`));
  }
  if (!items.length) return null;
  return h('section', {}, h('h3', {}, 'Needs review'), h('ul', { data: { testid: 'review' } }, ...items));
}

function reviewItem(field: string, item: string | ReviewItem): HTMLElement {
  if (typeof item === 'string') return h('li', { className: 'msg' }, `${field}: `, bounded(item));
  const where = [item.file, item.episode === undefined ? undefined : `episode ${item.episode}`].filter(Boolean);
  return h(
    'li',
    { className: 'msg' },
    `${field}${where.length ? ` (${where.join(', ')})` : ''}: `,
    bounded(String(item.text ?? '')),
  );
}

/** One episode's gate runs, ops and outputs, under its evidence. */
export function episodeExtras(e: EpisodeRecord): HTMLElement[] {
  const parts: HTMLElement[] = [];
  if (e.gates?.length) parts.push(gateRuns(e));
  if (e.outputs && Object.keys(e.outputs).length)
    parts.push(
      table(
        'episode-outputs',
        ['output', 'value'],
        Object.entries(e.outputs).map(([k, v]) =>
          h('tr', {}, h('td', {}, k), h('td', { className: 'msg' }, bounded(v))),
        ),
      ),
    );
  if (e.outputsNote)
    parts.push(h('p', { className: 'msg', data: { testid: 'outputs-note' } }, `outputs note: ${e.outputsNote}`));
  if (e.ops?.length) parts.push(h('p', { data: { testid: 'ops' } }, `ops: ${e.ops.join(', ')}`));
  if (e.opsRejected)
    parts.push(h('p', { className: 'error', data: { testid: 'ops-rejected' } }, `ops rejected: ${e.opsRejected}`));
  return parts;
}

function gateRuns(e: EpisodeRecord): HTMLElement {
  const rows = (e.gates ?? []).map((g) => {
    const exit = g.timedOut ? 'timed out' : g.exitCode === null ? 'killed' : `exit ${g.exitCode}`;
    const fix =
      g.fixExitCode === undefined ? '' : ` (fix ${g.fixExitCode === null ? 'killed' : `exit ${g.fixExitCode}`})`;
    return h(
      'tr',
      { data: { gate: g.name, exit: String(g.exitCode) } },
      h('td', {}, g.name),
      h('td', { className: g.exitCode === 0 ? 'phase-Succeeded' : 'phase-Failed' }, `${exit}${fix}`),
      h('td', {}, g.durationMs === undefined ? '' : `${(g.durationMs / 1000).toFixed(1)} s`),
      h('td', { className: 'msg' }, h('pre', { className: 'tail' }, g.output ?? '')),
    );
  });
  return table('gate-runs', ['gate', 'result', 'duration', 'output tail'], rows);
}
