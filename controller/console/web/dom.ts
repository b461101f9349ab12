/// <reference lib="dom" />
// DOM helpers for the console page. Every string becomes a text node (textContent): nothing an agent wrote
// is ever parsed as HTML. Links are built for our own routes (#/...) and, from data, only for http(s) URLs.

type Child = Node | string | number | undefined | null | false;
type Props = {
  className?: string;
  title?: string;
  route?: string;
  onclick?: (e: MouseEvent) => void;
  data?: Record<string, string>;
};

export function h(tag: string, props: Props = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  if (props.className) el.className = props.className;
  if (props.title !== undefined) el.title = visible(props.title);
  if (props.route !== undefined && el instanceof HTMLAnchorElement)
    el.href = `#/${props.route.split('/').map(encodeURIComponent).join('/')}`;
  if (props.onclick) el.addEventListener('click', props.onclick);
  for (const [k, v] of Object.entries(props.data ?? {})) el.dataset[k] = v;
  append(el, children);
  return el;
}

/** A link out of the console only for an http(s) URL; anything else (javascript:, data:) is shown as text. */
export function externalLink(url: string, text: string, testid: string): HTMLElement {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed?.protocol !== 'http:' && parsed?.protocol !== 'https:')
    return h('span', { title: url, data: { testid } }, text);
  const a = h('a', { title: url, data: { testid } }, text) as HTMLAnchorElement;
  a.href = parsed.href;
  a.rel = 'noopener noreferrer';
  a.target = '_blank';
  return a;
}

export function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    el.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(visible(String(c))) : c);
  }
}

/** Terminal escapes and other control characters out (kept: newline and tab): a log shows as plain text. */
export function visible(text: string): string {
  return text
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g, '')
    .replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, '');
}

export function usd(n: number | undefined): string {
  return n === undefined ? '' : `$${n.toFixed(n < 10 ? 4 : 2)}`;
}

export function ago(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}

export function seconds(from?: string, to?: string): number | undefined {
  if (!from || !to) return undefined;
  return Math.max(0, (Date.parse(to) - Date.parse(from)) / 1000);
}

/** GET a JSON API path; actions send the header the server requires of them. */
export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(path, { ...init, headers: { 'X-Episodic-Console': '1', ...(init.headers ?? {}) } });
  const body = (await res.json().catch(() => ({}))) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `${res.status} ${res.statusText}`);
  return body;
}
