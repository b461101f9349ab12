// The task page's blackboard (its namespace's keys, what {{bb.KEY}} reads) and its waiting mailbox messages.
// Both bounded by the server (board-view.ts); every key, value and text is agent or person text: text nodes.
import { h } from './dom.ts';
import { withVisibleBidi } from './files.ts';
import { bounded } from './pipeline.ts';
import type { TaskDetail } from './types.ts';

export function boardSection(d: TaskDetail): HTMLElement | null {
  if (!d.blackboard && !d.mailbox) return null;
  return h(
    'section',
    {},
    h('h3', {}, `Blackboard (namespace ${d.row.namespace})`),
    blackboard(d),
    h('h3', {}, 'Mailbox: waiting messages'),
    mailbox(d),
  );
}

function blackboard(d: TaskDetail): HTMLElement {
  const board = d.blackboard;
  if (!board?.entries.length) return h('p', { data: { testid: 'blackboard' } }, 'none');
  return h(
    'div',
    { data: { testid: 'blackboard' } },
    h(
      'table',
      { className: 'facts' },
      h('tr', {}, h('th', {}, 'key'), h('th', {}, 'value')),
      ...board.entries.map((e) =>
        h(
          'tr',
          { data: { key: e.key } },
          h('td', { className: 'msg' }, h('code', {}, withVisibleBidi(e.key))),
          h('td', { className: 'msg whole' }, bounded(withVisibleBidi(e.value))),
        ),
      ),
    ),
    board.more ? h('p', {}, `${board.more} more keys not listed`) : null,
  );
}

function mailbox(d: TaskDetail): HTMLElement {
  const mail = d.mailbox;
  if (!mail?.messages.length) return h('p', { data: { testid: 'mailbox' } }, 'none');
  return h(
    'div',
    { data: { testid: 'mailbox' } },
    h(
      'table',
      {},
      h('tr', {}, h('th', {}, 'at'), h('th', {}, 'from'), h('th', {}, 'text')),
      ...mail.messages.map((m) =>
        h(
          'tr',
          { data: { message: m.id } },
          h('td', {}, m.at),
          h('td', {}, withVisibleBidi(m.from)),
          h('td', { className: 'msg whole' }, bounded(withVisibleBidi(m.text))),
        ),
      ),
    ),
    mail.more ? h('p', {}, `${mail.more} more messages waiting`) : null,
  );
}
