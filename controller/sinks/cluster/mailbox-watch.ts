// Cluster mailbox events: an informer on the ConfigMaps labelled episodic.dev/mailbox. Every mailbox has
// carried the label since mailboxes exist (KubeMailboxes creates them with it, and merge patches keep it),
// so there are no unlabelled ones to list; one stripped of it by hand is still read by name at the
// reconciler's resync. A mailbox that appears, or gains a message key, names its task; removals
// (acknowledgements) and deletions are not news. The informer relists after a 410 and re-watches after
// errors and silence (kube/informer.ts); its relist reports what arrived meanwhile as adds and updates.
import type { MailboxEvents } from '../../core/mailboxes.ts';
import { Informer } from '../../kube/informer.ts';
import type { InformerOptions } from '../../kube/informer.ts';
import type { KubeObject } from '../../kube/objects.ts';
import { MAILBOX_LABEL, mailboxName } from './mailboxes.ts';

export interface MailboxConfigMap extends KubeObject {
  data?: Record<string, string>;
}

const PREFIX = mailboxName('');

/** The ConfigMaps to list and watch: all namespaces', or one's. */
export function mailboxesPath(namespace?: string): string {
  return namespace ? `/api/v1/namespaces/${namespace}/configmaps` : '/api/v1/configmaps';
}

export class KubeMailboxWatch implements MailboxEvents {
  readonly informer: Informer<MailboxConfigMap>;
  private readonly listeners: Array<(key: string) => void> = [];

  constructor(opts: Omit<InformerOptions, 'path' | 'labelSelector' | 'resource'> & { namespace?: string }) {
    this.informer = new Informer<MailboxConfigMap>({
      ...opts,
      resource: 'configmaps',
      path: mailboxesPath(opts.namespace),
      labelSelector: MAILBOX_LABEL,
    });
    this.informer.on({
      add: (cm) => this.arrived(cm),
      update: (old, cm) => {
        if (Object.keys(cm.data ?? {}).some((id) => old.data?.[id] === undefined)) this.arrived(cm);
      },
    });
  }

  subscribe(onArrival: (key: string) => void): void {
    this.listeners.push(onArrival);
  }

  private arrived(cm: MailboxConfigMap): void {
    const { namespace, name } = cm.metadata;
    if (!namespace || !name.startsWith(PREFIX) || Object.keys(cm.data ?? {}).length === 0) return;
    const key = `${namespace}/${name.slice(PREFIX.length)}`;
    for (const listener of this.listeners) listener(key);
  }
}
