// `episodic init [DIR] --agent claude|codex|gemini|NAME`: a first task to edit, not a blank page. Writes
// DIR/task.yaml (an AgentTask with the README's headless command line for that CLI, its own retries off),
// and in the task's workspace PROMPT.md and PLAN.md (RalphSharp's markers). For claude, also
// DIR/credentials.yaml: an AgentCredentials the task uses, so the agent runs behind the model gateway (README
// "Gateway") and never holds the key. Never overwrites a file.
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { invocation, shellWord } from './invocation.ts';
import { DNS_LABEL_MAX, DNS_LABEL_PATTERN } from '../api/agent-task.ts';
import { printable } from '../util/printable.ts';
import { yamlLib } from '../util/yaml-lib.ts';

interface InitOptions {
  agent: string;
  name?: string;
}

interface AgentPreset {
  agent: Record<string, unknown>;
  /** Header comments of task.yaml: what to check before the first run. */
  notes: string[];
  /** The AgentCredentials spec written beside the task (its name: CREDENTIALS_NAME), when the agent uses one. */
  credentials?: Record<string, unknown>;
}

const CREDENTIALS_NAME = 'claude';

/**
 * USD per million tokens (Anthropic's list prices, 2026): the gateway meters spend from these, so a task's
 * maxCostUSD holds mid-episode. Unknown models are priced as Opus: a budget errs on the side of stopping early.
 */
const CLAUDE_PRICING = {
  'claude-sonnet-*': { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 },
  'claude-haiku-*': { inputPerMTok: 1, outputPerMTok: 5, cacheReadPerMTok: 0.1, cacheWritePerMTok: 1.25 },
  '*': { inputPerMTok: 15, outputPerMTok: 75, cacheReadPerMTok: 1.5, cacheWritePerMTok: 18.75 },
};

const CODEX_PROVIDER = [
  'model_provider=episodic',
  'model_providers.episodic.name=openai',
  'model_providers.episodic.base_url=https://api.openai.com/v1',
  'model_providers.episodic.env_key=OPENAI_API_KEY',
  'model_providers.episodic.wire_api=responses',
  'model_providers.episodic.request_max_retries=0',
  'model_providers.episodic.stream_max_retries=0',
];

const env = (vars: Record<string, string>) => Object.entries(vars).map(([name, value]) => ({ name, value }));

/** The README's "Agent CLIs" tables, as specs: each CLI headless, with its own retries off. */
function preset(agent: string): AgentPreset {
  switch (agent) {
    case 'claude':
      return {
        agent: {
          command: ['claude', '-p', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions'],
          promptVia: 'stdin',
          output: 'claude',
          credentials: CREDENTIALS_NAME,
          env: env({
            CLAUDE_CODE_MAX_RETRIES: '0',
            DISABLE_TELEMETRY: '1',
            DISABLE_ERROR_REPORTING: '1',
            DISABLE_AUTOUPDATER: '1',
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          }),
        },
        credentials: {
          provider: 'anthropic',
          credentials: [{ name: 'main', env: 'ANTHROPIC_API_KEY' }],
          pricing: CLAUDE_PRICING,
        },
        notes: [
          'Needs `claude` on PATH and ANTHROPIC_API_KEY in the environment of `episodic run`: behind the model',
          'gateway (credentials.yaml) the agent gets a token of its own and the gateway URL, never the key.',
          "CLAUDE_CODE_MAX_RETRIES=0: Claude Code's own retries off; episodic retries an outage with backoff.",
          '--dangerously-skip-permissions lets the agent run anything in its workspace: choose your permission mode.',
        ],
      };
    case 'codex':
      return {
        agent: {
          command: [
            'codex',
            'exec',
            '--json',
            '--full-auto',
            '--skip-git-repo-check',
            ...CODEX_PROVIDER.flatMap((c) => ['-c', c]),
            '-',
          ],
          promptVia: 'stdin',
          output: 'codex',
          pricing: { inputPerMTok: 1.25, outputPerMTok: 10, cacheReadPerMTok: 0.125, cacheWritePerMTok: 1.25 },
        },
        notes: [
          'Needs `codex` on PATH and OPENAI_API_KEY.',
          "A provider of our own only to set codex's retries to 0 (the built-in `openai` cannot be changed).",
          "codex reports tokens, not cost: pricing turns them into dollars for maxCostUSD; set your model's rates.",
        ],
      };
    case 'gemini':
      return {
        agent: {
          command: ['gemini', '-m', 'gemini-2.5-pro', '--output-format', 'stream-json', '--yolo', '--prompt'],
          promptVia: 'argument',
          output: 'gemini',
          pricing: { inputPerMTok: 1.25, outputPerMTok: 10 },
          env: env({ GEMINI_CLI_TRUST_WORKSPACE: 'true' }),
        },
        notes: [
          'Needs `gemini` on PATH and GEMINI_API_KEY. Its own retries are off only in $HOME/.gemini/settings.json:',
          '{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":1}}',
          'gemini reports tokens, not cost: pricing turns them into dollars for maxCostUSD.',
        ],
      };
    default:
      return {
        agent: { command: [agent], promptVia: 'stdin', output: 'text' },
        notes: [
          `A generic command: add ${agent}'s headless flags to command, and turn its own retries off if it has any.`,
          'promptVia: stdin (default), argument (the prompt as the last argument) or file ($EPISODIC_PROMPT_FILE).',
          'output: text reads the last 64 KiB of stdout for <promise>COMPLETE</promise>.',
        ],
      };
  }
}

const PROMPT = `You are episode {{episode}} of at most {{maxEpisodes}} working on {{task}}. You start fresh each
episode: everything you know is in this directory and its git history.

1. Read PLAN.md. Take the first item marked [~] (in progress), else the first marked [ ] (pending).
2. Mark it [~] and do it. Verify it (build, tests) before you call it done.
3. Mark it [x] when it is done, [!] if it failed (say why on the line), [S] if it should be skipped (say why).
4. Stop after one item. Commit your work if this is a git repository.

When no item is left marked [ ] or [~], end your answer with <promise>COMPLETE</promise>.
Last episode's message: {{lastEpisode.message}}
`;

const PLAN = `# Plan

One item per episode. Markers: [ ] pending, [~] in progress, [x] done, [!] failed, [S] skipped.

- [ ] Describe the first step here
- [ ] And the next one
`;

export function registerInit(program: Command): void {
  program
    .command('init')
    .description('write a first AgentTask, its PROMPT.md and PLAN.md into DIR (nothing is overwritten)')
    .argument('[dir]', 'spec directory to write into (created)', '.')
    .requiredOption('--agent <cli>', 'claude, codex, gemini, or the command name of any other agent CLI')
    .option('--name <name>', 'the task name (default: from DIR)')
    .action(async (dir: string, opts: InitOptions) => {
      process.exitCode = await initCommand(dir, opts);
    });
}

export async function initCommand(dirArg: string, opts: InitOptions): Promise<number> {
  const dir = resolve(dirArg);
  const name = opts.name ?? nameFrom(basename(dir));
  if (name.length > DNS_LABEL_MAX || !new RegExp(DNS_LABEL_PATTERN).test(name)) {
    console.error(`episodic init: --name ${printable(name)}: must be a lowercase RFC 1123 label (a-z, 0-9, "-")`);
    return 2;
  }
  if (!opts.agent.trim() || opts.agent.startsWith('-')) {
    console.error(`episodic init: --agent ${printable(opts.agent)}: claude, codex, gemini or a command name`);
    return 2;
  }
  const workspace = `ws/${name}`;
  const { agent, notes, credentials } = preset(opts.agent);
  const files = new Map([
    [
      join(dir, 'task.yaml'),
      taskYaml(name, workspace, agent, [`Written by \`episodic init --agent ${opts.agent}\`.`, ...notes]),
    ],
    ...(credentials ? [[join(dir, 'credentials.yaml'), credentialsYaml(credentials)] as [string, string]] : []),
    [join(dir, workspace, 'PROMPT.md'), PROMPT],
    [join(dir, workspace, 'PLAN.md'), PLAN],
  ]);
  const existing = [...files.keys()].filter((f) => existsSync(f));
  if (existing.length > 0) {
    console.error(`episodic init: would overwrite ${existing.map((f) => printable(f)).join(', ')}; nothing written`);
    return 1;
  }
  for (const [file, text] of files) {
    await mkdir(dirname(file), { recursive: true });
    // 'wx': a file that appeared meanwhile is still not overwritten.
    await writeFile(file, text, { flag: 'wx' });
  }
  const shown = (f: string) => printable(relative(process.cwd(), f) || '.');
  process.stdout.write(
    [
      `wrote ${shown(join(dir, 'task.yaml'))} (AgentTask ${name}, agent ${printable(opts.agent)})`,
      ...(credentials
        ? [
            `      ${shown(join(dir, 'credentials.yaml'))} (AgentCredentials ${CREDENTIALS_NAME}: the gateway holds the key)`,
          ]
        : []),
      `      ${shown(join(dir, workspace, 'PROMPT.md'))} (the prompt of every episode)`,
      `      ${shown(join(dir, workspace, 'PLAN.md'))} (the checklist: write your steps there)`,
      'next:',
      `  ${invocation()} run ${shellWord(dirArg)}`,
      '',
    ].join('\n'),
  );
  return 0;
}

function taskYaml(name: string, workspace: string, agent: Record<string, unknown>, notes: string[]): string {
  const task = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentTask',
    metadata: { name },
    spec: {
      promptFile: 'PROMPT.md',
      agent,
      workspace,
      completion: { promise: 'COMPLETE' },
      progress: { checklist: 'PLAN.md' },
      limits: { maxEpisodes: 20, episodeTimeoutSeconds: 1800, maxConsecutiveFailures: 3, maxCostUSD: 5 },
    },
  };
  const header = notes.map((n) => `# ${n}`).join('\n');
  return `${header}\n${yamlLib().stringify(task, { lineWidth: 0 })}`;
}

function credentialsYaml(spec: Record<string, unknown>): string {
  const doc = {
    apiVersion: 'episodic.dev/v1alpha1',
    kind: 'AgentCredentials',
    metadata: { name: CREDENTIALS_NAME },
    spec,
  };
  const header = [
    '# The model gateway holds this key; the task names it with spec.agent.credentials (README "Gateway").',
    "# Locally a credential names a variable of the controller's environment; on a cluster, a Secret:",
    '#   credentials: [{ name: main, secretRef: { name: agent-keys, key: anthropic } }]',
    "# pricing meters spend at the wire (maxCostUSD, AgentBudgets): check your models' rates.",
  ].join('\n');
  return `${header}\n${yamlLib().stringify(doc, { lineWidth: 0 })}`;
}

/** A task name from a directory name: lowercase, other characters as "-", at most 63. */
function nameFrom(text: string): string {
  const name = text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .slice(0, DNS_LABEL_MAX)
    .replace(/^-+|-+$/g, '');
  return name || 'task';
}
