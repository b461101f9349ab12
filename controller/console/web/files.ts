// An episode's changed paths as the evidence keeps them (the first FILES_MAX, each bounded). A path is agent
// text: shown as a text node, its bidi controls made visible so "txt.exe" cannot pose as "exe.txt".
import type { WorkspaceEvidence } from '../../api/leash.ts';
import { h } from './dom.ts';

const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Bidi controls as ⟨U+XXXX⟩: what the name holds, shown in reading order. */
export function withVisibleBidi(text: string): string {
  return text.replace(BIDI, (c) => `⟨U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}⟩`);
}

export function changedFiles(ws: WorkspaceEvidence): HTMLElement {
  const files = ws.files ?? [];
  const total = ws.filesChanged ?? files.length;
  return h(
    'div',
    { data: { testid: 'files' } },
    h(
      'ul',
      { className: 'files' },
      ...files.map((f) => h('li', {}, h('code', { title: withVisibleBidi(f) }, withVisibleBidi(f)))),
    ),
    total > files.length ? h('p', { data: { testid: 'files-more' } }, `${total - files.length} more not listed`) : null,
  );
}
