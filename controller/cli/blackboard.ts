// `episodic blackboard get|set|del`: a person reads and writes the namespace blackboard that agent ops
// set/del write (locally STATE/blackboard/NS.json, with --kubeconfig the ConfigMap episodic-blackboard).
// Same bounds as the ops; last writer wins.
import { resolveStateDir } from '../util/state-layout.ts';
import type { Command } from 'commander';
import { BLACKBOARD_KEYS_MAX, BLACKBOARD_VALUE_MAX } from '../api/bounds.ts';
import { BlackboardKeySchema } from '../api/ops.ts';
import type { Blackboard } from '../ops/blackboard.ts';

interface BoardOptions {
  stateDir?: string;
  namespace: string;
  kubeconfig?: string;
}

type Change = (board: Blackboard) => { board: Blackboard; value: string } | undefined;

export function registerBlackboard(program: Command): void {
  const bb = program
    .command('blackboard')
    .description('read or write the namespace blackboard of agent ops (locally, or on a cluster with --kubeconfig)');
  const common = (c: Command) =>
    c
      .option('--state-dir <path>', 'local: state directory (default DIR/.episodic)')
      .option('-n, --namespace <ns>', 'namespace of the blackboard', 'default')
      .option('--kubeconfig <path>', 'the ConfigMap episodic-blackboard on this cluster instead');
  common(
    bb
      .command('get')
      .argument('[key]', 'one key (default: all, as JSON)')
      .argument('[dir]', 'local: spec directory', '.'),
  )
    .description('print the blackboard, or one value')
    .action(async (key: string | undefined, dir: string, opts: BoardOptions) => {
      process.exitCode = await getCommand(key, dir, opts);
    });
  common(bb.command('set').argument('<key>').argument('<value>').argument('[dir]', 'local: spec directory', '.'))
    .description('write one key')
    .action(async (key: string, value: string, dir: string, opts: BoardOptions) => {
      if (value.length > BLACKBOARD_VALUE_MAX) {
        console.error(`episodic blackboard set: the value is longer than ${BLACKBOARD_VALUE_MAX} characters`);
        process.exitCode = 2;
        return;
      }
      process.exitCode = await changeCommand('set', key, dir, opts, setKey(key, value));
    });
  common(bb.command('del').argument('<key>').argument('[dir]', 'local: spec directory', '.'))
    .description('remove one key')
    .action(async (key: string, dir: string, opts: BoardOptions) => {
      process.exitCode = await changeCommand('del', key, dir, opts, delKey(key));
    });
}

function setKey(key: string, value: string): Change {
  return (board) => {
    if (!Object.hasOwn(board.entries, key) && Object.keys(board.entries).length >= BLACKBOARD_KEYS_MAX)
      throw new Error(`the blackboard holds ${BLACKBOARD_KEYS_MAX} keys already`);
    return { board: { ...board, entries: { ...board.entries, [key]: value } }, value: `set ${key}` };
  };
}

function delKey(key: string): Change {
  return (board) => {
    const { [key]: _gone, ...entries } = board.entries;
    return { board: { ...board, entries }, value: `deleted ${key}` };
  };
}

async function getCommand(key: string | undefined, dir: string, opts: BoardOptions): Promise<number> {
  try {
    const board = await readBoard(dir, opts);
    if (key === undefined) console.log(JSON.stringify(board.entries, null, 2));
    else if (Object.hasOwn(board.entries, key)) console.log(board.entries[key]);
    else {
      console.error(`episodic blackboard: no key ${key} in namespace ${opts.namespace}`);
      return 1;
    }
    return 0;
  } catch (err) {
    console.error(`episodic blackboard: ${(err as Error).message}`);
    return 1;
  }
}

async function changeCommand(
  verb: string,
  key: string,
  dir: string,
  opts: BoardOptions,
  change: Change,
): Promise<number> {
  const checked = BlackboardKeySchema.safeParse(key);
  if (!checked.success) {
    console.error(`episodic blackboard ${verb}: key ${checked.error.issues[0]?.message}`);
    return 2;
  }
  try {
    const said = await changeBoard(dir, opts, change);
    console.log(`${said} in the blackboard of namespace ${opts.namespace}`);
    return 0;
  } catch (err) {
    console.error(`episodic blackboard ${verb}: ${(err as Error).message}`);
    return 1;
  }
}

function stateDirOf(dir: string, opts: BoardOptions): string {
  return resolveStateDir(dir, opts.stateDir);
}

async function readBoard(dir: string, opts: BoardOptions): Promise<Blackboard> {
  if (opts.kubeconfig === undefined) {
    const { readLocalBlackboard } = await import('../ops/local-blackboard.ts');
    return readLocalBlackboard(stateDirOf(dir, opts), opts.namespace);
  }
  const { readClusterBlackboard } = await import('../ops/cluster-blackboard.ts');
  const client = await clusterClient(opts.kubeconfig);
  try {
    return await readClusterBlackboard(client, opts.namespace);
  } finally {
    client.close();
  }
}

async function changeBoard(dir: string, opts: BoardOptions, change: Change): Promise<string | undefined> {
  if (opts.kubeconfig === undefined) {
    const { updateLocalBlackboard } = await import('../ops/local-blackboard.ts');
    return updateLocalBlackboard(stateDirOf(dir, opts), opts.namespace, change);
  }
  const { updateClusterBlackboard } = await import('../ops/cluster-blackboard.ts');
  const client = await clusterClient(opts.kubeconfig);
  try {
    return await updateClusterBlackboard(client, opts.namespace, change);
  } finally {
    client.close();
  }
}

async function clusterClient(kubeconfig: string) {
  const { loadKubeConfig } = await import('../kube/kube-config.ts');
  const { KubeClient } = await import('../kube/kube-client.ts');
  return KubeClient.create(await loadKubeConfig(kubeconfig));
}
