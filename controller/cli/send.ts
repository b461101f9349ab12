// `episodic send NAME "text" [DIR]`: a person puts a message into a task's mailbox, as the send op does for
// an agent. Locally into the state directory (a running `episodic run` sees it, or the next one does); with
// --kubeconfig into the task's mailbox ConfigMap. Neither edits the spec.
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { SEND_MESSAGE_MAX } from '../api/bounds.ts';
import type { Mailboxes, Message, SendOutcome } from '../core/mailboxes.ts';
import { validNames } from '../core/mailboxes.ts';
import { findLocalTask, userName } from './task-target.ts';

interface SendOptions {
  stateDir?: string;
  namespace: string;
  kubeconfig?: string;
  from?: string;
}

export function registerSend(program: Command): void {
  program
    .command('send')
    .description("put a message into a task's mailbox ({{messages}} of its next episode; wakes a wake: onMessage task)")
    .argument('<name>', 'the task')
    .argument('<text>', 'the message')
    .argument('[dir]', 'local: directory of AgentTask YAML files (default .)', '.')
    .option('--state-dir <path>', 'local: state directory (default DIR/.episodic)')
    .option('-n, --namespace <ns>', 'namespace of the task', 'default')
    .option('--kubeconfig <path>', 'send to the AgentTask on this cluster instead')
    .option('--from <who>', 'the sender the task sees (default: your user name)')
    .action(async (name: string, text: string, dir: string, opts: SendOptions) => {
      process.exitCode = await sendCommand(name, text, dir, opts);
    });
}

export async function sendCommand(name: string, text: string, dirArg: string, opts: SendOptions): Promise<number> {
  if (!validNames(opts.namespace, name)) return fail(`"${name}" in "${opts.namespace}" is not a task name`, 2);
  if (text.length === 0 || text.length > SEND_MESSAGE_MAX)
    return fail(`the message must have 1 to ${SEND_MESSAGE_MAX} characters`, 2);
  const message: Message = {
    id: `person.${Date.now().toString(36)}.${randomBytes(4).toString('hex')}`,
    from: (opts.from ?? userName('person')).slice(0, 64),
    at: new Date().toISOString(),
    text,
  };
  try {
    const where = opts.kubeconfig !== undefined ? await onCluster(name, opts) : await locally(name, dirArg, opts);
    if ('error' in where) return fail(where.error, 1);
    const sent: SendOutcome = await where.mailboxes.send(opts.namespace, name, message).finally(where.close);
    if (sent.result === 'refused') return fail(sent.message, 1);
    console.log(`message ${message.id} sent to ${opts.namespace}/${name}`);
    return 0;
  } catch (err) {
    return fail((err as Error).message, 1);
  }
}

type Target = { mailboxes: Mailboxes; close: () => void } | { error: string };

async function locally(name: string, dirArg: string, opts: SendOptions): Promise<Target> {
  const { dir, stateDir, task } = await findLocalTask(dirArg, opts.stateDir, opts.namespace, name);
  if (!task) return { error: `no task ${opts.namespace}/${name} in ${dir}` };
  const { LocalMailboxes } = await import('../sinks/local/mailboxes.ts');
  return { mailboxes: new LocalMailboxes(stateDir), close: () => {} };
}

async function onCluster(name: string, opts: SendOptions): Promise<Target> {
  const { loadKubeConfig } = await import('../kube/kube-config.ts');
  const { KubeClient, isStatus } = await import('../kube/kube-client.ts');
  const { taskPath } = await import('../kube/names.ts');
  const { KubeMailboxes } = await import('../sinks/cluster/mailboxes.ts');
  const client = await KubeClient.create(await loadKubeConfig(opts.kubeconfig), { userAgent: 'episodic-send' });
  try {
    await client.get(taskPath(opts.namespace, name));
  } catch (err) {
    client.close();
    if (isStatus(err, 404)) return { error: `AgentTask ${opts.namespace}/${name} not found` };
    throw err;
  }
  return { mailboxes: new KubeMailboxes(client), close: () => client.close() };
}

function fail(message: string, code: number): number {
  console.error(`episodic send: ${message}`);
  return code;
}
