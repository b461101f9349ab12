// The console's charts, drawn by uPlot (its own script and stylesheet from /assets, loaded when a chart is first
// drawn: no CDN, no inline script): a task's cumulative cost against its cap, its episodes' durations, a budget's
// spend per hour or day against its cap. Time and money on labelled axes; the legend shows the exact figure under
// the cursor.
import type uPlot from 'uplot';
import type { EpisodeRecord } from '../../api/episode-record.ts';
import type { LedgerBucket } from '../../api/agent-budget.ts';
import { h, seconds, usd } from './dom.ts';
import { spentUSD } from './spend.ts';

const BLUE = '#0b57d0';
const RED = '#b3261e';
const HOUR_S = 3600;
const DAY_S = 86_400;

type Lib = typeof uPlot;
type ChartOptions = Omit<uPlot.Options, 'width' | 'height'>;
let loading: Promise<Lib> | undefined;

/** /assets/uplot.js and uplot.css, added once (script-src and style-src 'self': the CSP allows them). */
function loadUplot(): Promise<Lib> {
  loading ??= new Promise<Lib>((resolve, reject) => {
    if (!document.querySelector('link[data-uplot]')) {
      const css = h('link', { data: { uplot: '' } }) as HTMLLinkElement;
      css.rel = 'stylesheet';
      css.href = '/assets/uplot.css';
      document.head.append(css);
    }
    const script = document.createElement('script');
    script.src = '/assets/uplot.js';
    script.onload = () => resolve((window as unknown as { uPlot: Lib }).uPlot);
    script.onerror = () => {
      loading = undefined; // the next chart tries again
      script.remove();
      reject(new Error('/assets/uplot.js did not load'));
    };
    document.head.append(script);
  });
  return loading;
}

/** Charts made for a page: destroyed before the page draws again (uPlot keeps window listeners). */
export class Charts {
  private made: uPlot[] = [];
  // A chart whose script arrives after destroy() belongs to a page no longer shown: it is not drawn.
  private generation = 0;

  destroy(): void {
    for (const c of this.made) c.destroy();
    this.made = [];
    this.generation++;
  }

  /** The chart in a box of its own (testid for the tests), or "none" without data; drawn once uPlot is loaded. */
  draw(testid: string, title: string, options: (lib: Lib) => ChartOptions, data: uPlot.AlignedData) {
    const box = h('div', { className: 'chart', data: { testid } }, h('h4', {}, title));
    if ((data[0]?.length ?? 0) === 0) {
      box.append(h('p', {}, 'none'));
      return box;
    }
    const plot = h('div', {});
    box.append(plot);
    const generation = this.generation;
    loadUplot().then(
      (lib) => {
        if (generation !== this.generation) return;
        const opts = options(lib);
        // The axes are drawn on the canvas; their names are said as text too (for a reader, and a search).
        const names = (opts.axes ?? []).map((a) => a.label).filter((l): l is string => typeof l === 'string');
        box.append(h('p', { className: 'axes', data: { testid: 'axes' } }, `axes: ${names.join(' · ')}`));
        this.made.push(new lib({ ...opts, width: chartWidth(), height: 220 }, data, plot));
      },
      (err: Error) => box.append(h('p', { className: 'error' }, err.message)),
    );
    return box;
  }
}

function chartWidth(): number {
  return Math.max(280, Math.min(900, window.innerWidth - 80));
}

const money = (_u: uPlot, v: number | null) => (v === null || v === undefined ? '—' : usd(v));
const moneyAxis = (_u: uPlot, vals: number[]) => vals.map((v) => `$${v.toFixed(v < 1 ? 2 : 0)}`);

/** The cap as a dashed red series, named with its figure: legend and the line's own label say what it is. */
function capSeries(label: string): uPlot.Series {
  return { label, stroke: RED, dash: [6, 4], width: 1.5, points: { show: false }, value: money };
}

/** A label drawn at the cap line's right end (the legend says it too; this keeps it beside the line). */
function capLabelHook(lib: Lib, label: string, cap: number): uPlot.Hooks.Arrays['draw'] {
  return [
    (u: uPlot) => {
      const ctx = u.ctx;
      const y = u.valToPos(cap, 'y', true);
      ctx.save();
      ctx.fillStyle = RED;
      ctx.font = `${Math.round(12 * lib.pxRatio)}px system-ui, sans-serif`;
      ctx.textAlign = 'right';
      ctx.fillText(label, u.bbox.left + u.bbox.width - 4, y - 7 * lib.pxRatio);
      ctx.restore();
    },
  ];
}

/** Cumulative cost at each episode's end, on a time axis, with maxCostUSD as a labelled line. */
export function costChart(charts: Charts, episodes: EpisodeRecord[], cap: number | undefined): HTMLElement {
  const ended = episodes.filter((e) => e.finishedAt);
  const xs: number[] = [];
  const ys: number[] = [];
  let sum = 0;
  for (const e of ended) {
    sum += spentUSD(e);
    xs.push(Date.parse(e.finishedAt as string) / 1000);
    ys.push(sum);
  }
  const capLabel = cap === undefined ? '' : `cap ${usd(cap)}`;
  const series: uPlot.Series[] = [{ label: 'time' }, { label: 'spent', stroke: BLUE, width: 2, value: money }];
  const data: uPlot.AlignedData = [xs, ys];
  if (cap !== undefined) {
    series.push(capSeries(capLabel));
    data.push(xs.map(() => cap));
  }
  return charts.draw(
    'cost-chart',
    `Cost over time: ${usd(sum)}${cap === undefined ? '' : ` of ${usd(cap)}`}`,
    (lib) => ({
      series,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(max, cap ?? 0) * 1.1 || 1] } },
      axes: [{ label: 'time (episode end)' }, { label: 'cost (USD, cumulative)', values: moneyAxis, size: 60 }],
      hooks: cap === undefined ? {} : { draw: capLabelHook(lib, capLabel, cap) },
    }),
    data,
  );
}

/** Each episode's duration as a bar, by episode number. */
export function durationChart(charts: Charts, episodes: EpisodeRecord[]): HTMLElement {
  const ended = episodes.filter((e) => seconds(e.startedAt, e.finishedAt) !== undefined);
  const data: uPlot.AlignedData = [
    ended.map((e) => e.number),
    ended.map((e) => seconds(e.startedAt, e.finishedAt) as number),
  ];
  return charts.draw(
    'duration-chart',
    'Episode durations',
    (lib) => ({
      series: [
        { label: 'episode', value: (_u, v) => (v === null ? '—' : `#${v}`) },
        {
          label: 'duration',
          stroke: BLUE,
          fill: 'rgba(11, 87, 208, 0.35)',
          paths: lib.paths.bars?.({ size: [0.6, 40] }),
          points: { show: false },
          value: (_u, v) => (v === null ? '—' : `${v.toFixed(1)} s`),
        },
      ],
      scales: {
        x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] },
        y: { range: (_u, _m, max) => [0, max * 1.1 || 1] },
      },
      axes: [
        { label: 'episode', incrs: [1, 2, 5, 10, 20, 50, 100], values: (_u, vals) => vals.map((v) => `#${v}`) },
        { label: 'duration (seconds)', values: (_u, vals) => vals.map((v) => `${v} s`), size: 60 },
      ],
    }),
    data,
  );
}

/** A budget's ledger summed per hour or per day (slot starts, in seconds), oldest first. */
export function spendPer(buckets: readonly LedgerBucket[], slot: 'hour' | 'day'): [number[], number[]] {
  const size = slot === 'hour' ? HOUR_S : DAY_S;
  const sums = new Map<number, number>();
  for (const b of buckets) {
    const at = Math.floor(Date.parse(b.start) / 1000 / size) * size;
    if (Number.isFinite(at)) sums.set(at, (sums.get(at) ?? 0) + b.usd);
  }
  const xs = [...sums.keys()].sort((a, b) => a - b);
  return [xs, xs.map((x) => sums.get(x) as number)];
}

export interface BudgetSpend {
  name: string;
  window?: string;
  limitUSD?: number;
  buckets: readonly LedgerBucket[];
}

/** One budget's spend per hour or day as bars, its limit for its window as a labelled line. */
export function budgetChart(charts: Charts, b: BudgetSpend, slot: 'hour' | 'day'): HTMLElement {
  const [xs, ys] = spendPer(b.buckets, slot);
  const capLabel = b.limitUSD === undefined ? '' : `${b.name}: ${usd(b.limitUSD)} per ${b.window ?? 'total'}`;
  const series = (lib: Lib): uPlot.Series[] => [
    { label: slot },
    {
      label: `spent per ${slot}`,
      stroke: BLUE,
      fill: 'rgba(11, 87, 208, 0.35)',
      paths: lib.paths.bars?.({ size: [0.6, 60] }),
      points: { show: false },
      value: money,
    },
    ...(b.limitUSD === undefined ? [] : [capSeries(capLabel)]),
  ];
  const data: uPlot.AlignedData = [xs, ys];
  if (b.limitUSD !== undefined) data.push(xs.map(() => b.limitUSD as number));
  const size = slot === 'hour' ? HOUR_S : DAY_S;
  return charts.draw(
    `budget-chart-${slot}`,
    `${b.name}: spend per ${slot}`,
    (lib) => ({
      series: series(lib),
      scales: {
        // From the data, not uPlot's guess: one slot alone would otherwise span years.
        x: { time: true, range: () => [(xs[0] ?? 0) - size / 2, (xs.at(-1) ?? 0) + size / 2] },
        y: { range: (_u, _m, max) => [0, Math.max(max, b.limitUSD ?? 0) * 1.1 || 1] },
      },
      axes: [{ label: `time (per ${slot})` }, { label: 'spend (USD)', values: moneyAxis, size: 60 }],
      hooks: b.limitUSD === undefined ? {} : { draw: capLabelHook(lib, capLabel, b.limitUSD) },
    }),
    data,
  );
}
