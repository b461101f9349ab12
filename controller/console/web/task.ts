// The Task page: episodes on a timeline coloured by outcome, cumulative cost against the cap, the selected
// episode's evidence and log (the running one followed live), the breaker, the audit trail, Resume and Suspend.
import type { EpisodeRecord } from '../../api/episode-record.ts';
import { api, append, externalLink, h, seconds, usd } from './dom.ts';
import { episodeExtras, outputs, review, stack, steps } from './pipeline.ts';
import { holdControls } from './hold.ts';
import { originSection } from './family.ts';
import type { TaskDetail } from './types.ts';
import { Charts, costChart, durationChart } from './charts.ts';
import { changedFiles } from './files.ts';
import { boardSection } from './board.ts';
import { spentUSD } from './spend.ts';
import { kindOf, kindWords, LEGEND } from './episode-kind.ts';

export class TaskPage {
  readonly root = h('div', { data: { testid: 'task' } });
  private detail: TaskDetail | undefined;
  private selected: number | undefined;
  private readonly charts = new Charts();
  private readonly logEl = h('pre', { className: 'log', data: { testid: 'log' } });
  /** The log as its bytes are, not rendered: a person's choice, kept across episodes. */
  private raw = false;
  private logLoading = false;
  private actionResult = '';
  /** The selected log was not there yet (404): the next log event fetches it. A streamed log is never re-read. */
  private logMissing = false;
  private logAbort: AbortController | undefined;
  private logRetry: ReturnType<typeof setTimeout> | undefined;
  readonly namespace: string;
  readonly name: string;

  constructor(namespace: string, name: string) {
    this.namespace = namespace;
    this.name = name;
  }

  get key(): string {
    return `${this.namespace}/${this.name}`;
  }

  private get base(): string {
    return `/api/tasks/${encodeURIComponent(this.namespace)}/${encodeURIComponent(this.name)}`;
  }

  /** What the last action answered: kept across the re-renders live updates cause. */
  private report(text: string): void {
    this.actionResult = text;
    this.root.querySelector('[data-testid="action-result"]')?.replaceChildren(text);
  }

  async refresh(): Promise<void> {
    try {
      this.detail = await api<TaskDetail>(this.base);
    } catch (err) {
      this.root.replaceChildren(h('p', { className: 'error' }, (err as Error).message));
      return;
    }
    const d = this.detail;
    const latest = d.status.currentEpisode?.number ?? d.episodes.at(-1)?.number;
    if (this.selected === undefined && latest !== undefined) this.selectEpisode(latest);
    this.render();
  }

  /** A log grew: a log that was not there yet (404) is fetched now; one being streamed is followed already. */
  logGrew(episode: number): void {
    if (episode === this.selected && this.logMissing) void this.loadLog();
  }

  private selectEpisode(n: number): void {
    this.logAbort?.abort();
    this.logLoading = false;
    clearTimeout(this.logRetry);
    this.selected = n;
    this.logEl.replaceChildren();
    this.logEl.dataset.episode = String(n);
    delete this.logEl.dataset.state;
    void this.loadLog();
  }

  private async loadLog(): Promise<void> {
    if (this.logLoading || this.selected === undefined) return;
    const episode = this.selected;
    const abort = new AbortController();
    this.logAbort = abort;
    this.logLoading = true;
    this.logMissing = false;
    try {
      // One response, rendered by the server (or raw), streamed for as long as the episode runs.
      const res = await fetch(`${this.base}/episodes/${episode}/log${this.raw ? '?raw' : ''}`, {
        signal: abort.signal,
      });
      if (!res.ok) return await this.logUnavailable(res, episode);
      await this.readStream(res);
    } catch {
      // aborted (another episode was selected) or the connection dropped: the log shows what came
    } finally {
      if (this.logAbort === abort) this.logLoading = false;
    }
  }

  private async readStream(res: Response): Promise<void> {
    this.logEl.dataset.raw = String(this.raw);
    this.logEl.dataset.state = res.headers.get('X-Log-Follow') === '1' ? 'following' : 'complete';
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      append(this.logEl, [decoder.decode(value, { stream: true })]);
    }
    this.logEl.dataset.state = 'complete';
  }

  /** No log to show: say why, plainly, and what the episode record kept; a pod not started yet is retried. */
  private async logUnavailable(res: Response, episode: number): Promise<void> {
    if (res.status === 404) {
      this.logMissing = true; // a local log not written yet: the next log event fetches it
      return;
    }
    const why = (await res.text()).trim();
    const record = this.detail?.episodes.find((e) => e.number === episode);
    this.logEl.dataset.state = res.status === 410 ? 'gone' : 'unavailable';
    this.logEl.replaceChildren();
    append(this.logEl, [
      why,
      record?.message ? `\n\nThe episode record kept its last message:\n${record.message}` : '',
    ]);
    if (res.status === 409 || res.status === 503)
      this.logRetry = setTimeout(() => {
        if (this.selected !== episode) return;
        this.logEl.replaceChildren();
        void this.loadLog();
      }, 2000);
  }

  private render(): void {
    const d = this.detail;
    if (!d) return;
    const s = d.status;
    const r = d.row;
    this.charts.destroy();
    this.root.replaceChildren(
      h(
        'section',
        {},
        h('h2', {}, r.key),
        h(
          'p',
          {},
          h('span', { className: `phase-${r.phase}`, data: { testid: 'phase' } }, r.phase),
          r.reason ? ` (${r.reason})` : '',
          ' — ',
          s.message ?? '',
        ),
        h(
          'p',
          {},
          `episodes ${r.episodes}${r.maxEpisodes ? ` / ${r.maxEpisodes}` : ''} · cost ${usd(r.costUSD)}${r.maxCostUSD ? ` / ${usd(r.maxCostUSD)}` : ''}`,
          r.progress ? ` · progress ${r.progress}` : '',
          r.step ? ` · step ${r.step}` : '',
          r.pullRequest ? ' · pull request ' : '',
          r.pullRequest ? externalLink(r.pullRequest.url, `#${r.pullRequest.number}`, 'pr') : null,
        ),
        h(
          'p',
          { data: { testid: 'breaker' } },
          `breaker: ${s.breaker?.state ?? 'Closed'}`,
          s.breaker?.lastErrorFingerprint ? ` · last error: ${s.breaker.lastErrorFingerprint}` : '',
        ),
        d.heldBy.length ? h('p', {}, `held by budgets: ${d.heldBy.join(', ')}`) : null,
        r.phase === 'NeedsReview' ? this.resumeButton() : null,
        holdControls(d, this.base, (text) => this.report(text)),
        h('p', { data: { testid: 'action-result' } }, this.actionResult),
      ),
      originSection(d),
      ...[review(d), steps(d), outputs(d), stack(d)].filter((x) => x !== null),
      h(
        'section',
        {},
        h('h3', {}, 'Episodes'),
        this.timeline(d),
        costChart(this.charts, d.episodes, r.maxCostUSD),
        durationChart(this.charts, d.episodes),
      ),
      h('section', {}, h('h3', {}, `Episode ${this.selected ?? ''}`), ...this.episode(), this.rawToggle(), this.logEl),
      ...[boardSection(d)].filter((x) => x !== null),
      h('section', {}, h('h3', {}, 'Audit trail'), audit(d)),
    );
  }

  /** One mark per episode coloured by its kind (kindOf), a named boundary wherever the step changes. */
  private timeline(d: TaskDetail): HTMLElement {
    const items: HTMLElement[] = [];
    let step: string | undefined;
    const boundary = (name: string | undefined) => {
      if (name === undefined || name === step) return;
      step = name;
      items.push(h('div', { className: 'step-boundary', title: `step ${name} begins`, data: { step: name } }, name));
    };
    for (const e of d.episodes) {
      boundary(e.step);
      items.push(this.mark(e.number, kindOf(e), e.outcome, seconds(e.startedAt, e.finishedAt), spentUSD(e)));
    }
    const running = d.status.currentEpisode;
    if (running) {
      boundary(d.status.step?.name);
      items.push(
        this.mark(running.number, 'running', 'running', seconds(running.startedAt, new Date().toISOString()), 0),
      );
    }
    return h(
      'div',
      {},
      h('div', { className: 'timeline', data: { testid: 'timeline' } }, ...items),
      items.length ? legend() : h('p', {}, 'none'),
    );
  }

  private mark(n: number, kind: string, outcome: string, secs: number | undefined, cost: number): HTMLElement {
    const what = kindWords(kind, outcome);
    const title = `episode ${n}: ${what}${secs === undefined ? '' : `, ${secs.toFixed(1)} s`}, ${usd(cost)}`;
    const el = h('div', {
      className: `mark o-${kind}${n === this.selected ? ' selected' : ''}`,
      title,
      data: { episode: String(n), outcome, kind },
      onclick: () => {
        this.selectEpisode(n);
        this.render();
      },
    });
    el.style.width = `${Math.min(80, 10 + Math.round(Math.sqrt(secs ?? 0) * 4))}px`;
    return el;
  }

  /** The selected episode: its evidence, then its gate runs, outputs and ops. */
  private episode(): HTMLElement[] {
    const e = this.detail?.episodes.find((x) => x.number === this.selected);
    return [this.evidence(e), ...(e ? episodeExtras(e) : [])];
  }

  private evidence(e: EpisodeRecord | undefined): HTMLElement {
    if (!e) return h('p', {}, this.selected === this.detail?.status.currentEpisode?.number ? 'running…' : '');
    const ws = e.evidence?.workspace;
    const facts: Array<[string, string]> = [
      [
        'outcome',
        `${e.outcome}${e.reason ? ` (${e.reason})` : ''}${e.exitCode === null ? '' : `, exit ${e.exitCode}`}`,
      ],
      ['duration', `${seconds(e.startedAt, e.finishedAt)?.toFixed(1) ?? '?'} s`],
      ['cost', usd(spentUSD(e))],
      [
        'files changed',
        ws
          ? ws.filesChanged !== undefined
            ? `${ws.filesChanged} (+${ws.insertions ?? 0} −${ws.deletions ?? 0})`
            : ws.changed
              ? 'changed'
              : 'none'
          : '',
      ],
      ['commit', ws?.commit ?? ''],
      ['step', e.step ?? ''],
      ['checklist', e.evidence?.checklist ? `${e.evidence.checklist.done}/${e.evidence.checklist.total}` : ''],
      ['error fingerprint', e.evidence?.errorFingerprint ?? ''],
      ['message', e.message ?? ''],
    ];
    return h(
      'table',
      { data: { testid: 'evidence' } },
      ...facts.filter(([, v]) => v).map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', { className: 'msg' }, v))),
      ws?.files?.length ? h('tr', {}, h('th', {}, 'paths'), h('td', { className: 'msg' }, changedFiles(ws))) : null,
    );
  }

  /** Rendered (the agent's words, one line per tool call) or the log's bytes as the agent printed them. */
  private rawToggle(): HTMLElement {
    return h(
      'button',
      {
        data: { testid: 'raw' },
        title: this.raw ? 'show the log rendered for reading' : 'show the log as the agent printed it',
        onclick: () => {
          this.raw = !this.raw;
          if (this.selected !== undefined) this.selectEpisode(this.selected);
          this.render();
        },
      },
      this.raw ? 'rendered' : 'raw',
    );
  }

  private resumeButton(): HTMLElement {
    return h(
      'button',
      {
        data: { testid: 'resume' },
        onclick: () => {
          if (!window.confirm(`Resume ${this.key}? It starts episodes again.`)) return;
          void this.resume();
        },
      },
      'Resume',
    );
  }

  private async resume(): Promise<void> {
    try {
      const res = await api<{ token: string; by: string; note?: string }>(`${this.base}/resume`, {
        method: 'POST',
        body: '{}',
        headers: { 'Content-Type': 'application/json' },
      });
      this.report(`resume requested by ${res.by} (token ${res.token})${res.note ? ` (${res.note})` : ''}`);
    } catch (err) {
      this.report(`resume refused: ${(err as Error).message}`);
    }
  }
}

function legend(): HTMLElement {
  return h(
    'div',
    { className: 'legend', data: { testid: 'legend' } },
    ...LEGEND.map(([kind, words]) => h('span', {}, h('i', { className: `swatch o-${kind}` }), words)),
  );
}

function audit(d: TaskDetail): HTMLElement {
  const rows = (d.status.audit ?? []).map((a) =>
    h(
      'tr',
      {},
      h('td', {}, a.at),
      h('td', {}, a.action),
      h('td', {}, a.by),
      h('td', {}, a.reason ?? ''),
      h('td', { className: 'msg' }, a.message),
    ),
  );
  if (rows.length === 0) return h('p', { data: { testid: 'audit' } }, 'none');
  return h(
    'table',
    { data: { testid: 'audit' } },
    h('tr', {}, ...['at', 'action', 'by', 'reason', 'message'].map((c) => h('th', {}, c))),
    ...rows,
  );
}
