// The Fleet table's columns: each one's header, its cell, and the value it sorts by (any column sorts).
import { ago, externalLink, h, usd } from './dom.ts';
import { defaultOrder, order, rank } from '../fleet-order.ts';
import type { TaskRow } from './types.ts';

/** Seconds from start to finish (or to now while it is not finished). */
export function durationOf(r: TaskRow, now: number): number | undefined {
  if (!r.startedAt) return undefined;
  const end = r.finishedAt ? Date.parse(r.finishedAt) : now;
  return Math.max(0, (end - Date.parse(r.startedAt)) / 1000);
}

export function duration(secs: number | undefined): string {
  if (secs === undefined || !Number.isFinite(secs)) return '';
  if (secs < 60) return `${Math.round(secs)}s`;
  if (secs < 3600) return `${Math.floor(secs / 60)}m ${Math.round(secs % 60)}s`;
  if (secs < 86400) return `${Math.floor(secs / 3600)}h ${Math.round((secs % 3600) / 60)}m`;
  return `${Math.floor(secs / 86400)}d ${Math.round((secs % 86400) / 3600)}h`;
}

/** An instant as UTC to the minute: "2026-12-01 18:44Z". */
export function when(iso: string | undefined): string {
  if (!iso || Number.isNaN(Date.parse(iso))) return '';
  return `${new Date(iso).toISOString().slice(0, 16).replace('T', ' ')}Z`;
}

const LABELS_SHOWN = 3;

function labelsCell(labels: Record<string, string>): HTMLElement {
  const all = Object.entries(labels).map(([k, v]) => `${k}=${v}`);
  const td = h('td', { className: 'labels', title: all.join('\n'), data: { testid: 'labels' } });
  for (const l of all.slice(0, LABELS_SHOWN)) td.append(h('span', { className: 'label' }, l));
  if (all.length > LABELS_SHOWN) td.append(h('span', { className: 'more' }, `+${all.length - LABELS_SHOWN}`));
  return td;
}

export interface Column {
  id: string;
  title: string;
  sort: (r: TaskRow, now: number) => string | number;
  cell: (r: TaskRow, now: number) => HTMLElement;
}

const text = (v: string | undefined) => h('td', {}, v ?? '');

export const COLUMNS: Column[] = [
  {
    id: 'name',
    title: 'Name',
    sort: (r) => r.key,
    cell: (r) =>
      h('td', {}, h('a', { route: `task/${r.namespace}/${r.name}` }, r.namespace === 'default' ? r.name : r.key)),
  },
  {
    id: 'phase',
    title: 'Phase',
    sort: (r) => rank(r),
    cell: (r) => h('td', { className: `phase-${r.phase}`, data: { testid: 'phase' } }, r.phase),
  },
  { id: 'reason', title: 'Reason', sort: (r) => r.reason ?? '', cell: (r) => text(r.reason) },
  { id: 'progress', title: 'Progress', sort: (r) => r.progress ?? '', cell: (r) => text(r.progress) },
  { id: 'step', title: 'Step', sort: (r) => r.step ?? '', cell: (r) => text(r.step) },
  {
    id: 'episodes',
    title: 'Episodes',
    sort: (r) => r.episodes,
    cell: (r) =>
      text(
        `${r.episodes}${r.maxEpisodes ? ` / ${r.maxEpisodes}` : ''}${r.runningEpisode ? ` (episode ${r.runningEpisode} running)` : ''}`,
      ),
  },
  {
    id: 'breaker',
    title: 'Breaker',
    sort: (r) => r.breaker ?? '',
    cell: (r) => h('td', { className: `breaker-${r.breaker ?? 'none'}` }, r.breaker ?? ''),
  },
  {
    id: 'cost',
    title: 'Cost / cap',
    sort: (r) => r.costUSD,
    cell: (r) =>
      h('td', { data: { testid: 'cost' } }, `${usd(r.costUSD)}${r.maxCostUSD ? ` / ${usd(r.maxCostUSD)}` : ''}`),
  },
  {
    id: 'started',
    title: 'Started',
    sort: (r) => r.startedAt ?? '',
    cell: (r) => h('td', { data: { testid: 'started' } }, when(r.startedAt)),
  },
  {
    id: 'duration',
    title: 'Duration',
    sort: (r, now) => durationOf(r, now) ?? -1,
    cell: (r, now) => h('td', { data: { testid: 'duration' } }, duration(durationOf(r, now))),
  },
  {
    id: 'lastProgress',
    title: 'Last progress',
    sort: (r) => r.lastProgressAt ?? '',
    cell: (r, now) => text(ago(r.lastProgressAt, now)),
  },
  {
    id: 'labels',
    title: 'Labels',
    sort: (r) => Object.entries(r.labels).join(' '),
    cell: (r) => labelsCell(r.labels),
  },
  {
    id: 'pr',
    title: 'PR',
    sort: (r) => r.pullRequest?.number ?? 0,
    cell: (r) => h('td', {}, r.pullRequest ? externalLink(r.pullRequest.url, `#${r.pullRequest.number}`, 'pr') : ''),
  },
  {
    id: 'message',
    title: 'Message',
    sort: (r) => r.message ?? '',
    cell: (r) => h('td', { className: 'msg' }, r.message ?? ''),
  },
];

export interface Sort {
  column: string;
  descending: boolean;
}

/** The order rows show in: by the chosen column (ties by name), or what needs a person first. */
export function comparator(sort: Sort | undefined, now: number): (a: TaskRow, b: TaskRow) => number {
  const column = COLUMNS.find((c) => c.id === sort?.column);
  if (!column) return defaultOrder;
  const sign = sort?.descending ? -1 : 1;
  return (a, b) => sign * order(column.sort(a, now), column.sort(b, now)) || order(a.key, b.key);
}
