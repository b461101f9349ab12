// Suspend / Unsuspend on the Task page: a person's suspend hold (api/hold.ts), set with a confirmation. The
// hold is not spec, so Unsuspend cannot lift spec.suspend: true, and the page says so.
import { api, h } from './dom.ts';
import type { TaskDetail } from './types.ts';

const FINISHED = new Set(['Succeeded', 'Failed', 'Skipped']);

/** The hold's state in words and the one button that changes it; null when there is nothing to do. */
export function holdControls(d: TaskDetail, base: string, report: (text: string) => void): HTMLElement | null {
  const key = d.row.key;
  const held = d.hold?.suspended === true;
  const parts: Array<HTMLElement | string> = [];
  if (held) parts.push(`suspended by ${d.hold?.by} (a hold, not spec) `);
  if (held)
    parts.push(button('unsuspend', 'Unsuspend', `Unsuspend ${key}? Its episodes may start again.`, base, report));
  else if (!FINISHED.has(d.row.phase))
    parts.push(
      button(
        'suspend',
        'Suspend',
        `Suspend ${key}? A running episode is stopped; nothing starts until Unsuspend.`,
        base,
        report,
      ),
    );
  if (d.specSuspend)
    parts.push(
      h(
        'span',
        { data: { testid: 'spec-suspend' } },
        ' spec.suspend is true: only an edit of the spec lifts it; Unsuspend lifts the hold alone.',
      ),
    );
  return parts.length ? h('p', { data: { testid: 'hold' } }, ...parts) : null;
}

function button(action: string, label: string, question: string, base: string, report: (text: string) => void) {
  return h(
    'button',
    {
      data: { testid: action },
      onclick: () => {
        if (window.confirm(question)) void send(action, base, report);
      },
    },
    label,
  );
}

async function send(action: string, base: string, report: (text: string) => void): Promise<void> {
  try {
    const res = await api<{ by: string; note?: string }>(`${base}/${action}`, { method: 'POST', body: '{}' });
    report(`${action} requested by ${res.by}${res.note ? ` (${res.note})` : ''}`);
  } catch (err) {
    report(`${action} refused: ${(err as Error).message}`);
  }
}
