// The AgentTask and AgentEpisode CRDs: generated from the zod schemas, checked in, structural, and accepted
// and enforced by a real kube-apiserver (scripts/cluster/up.sh; set EPISODIC_SKIP_CLUSTER=1 to skip those).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  BUDGET_CRD_FILE,
  BUDGET_CRD_NAME,
  CRDS,
  TRIGGER_CRD_FILE,
  CREDENTIALS_CRD_FILE,
  CREDENTIALS_CRD_NAME,
  TRIGGER_CRD_NAME,
  CRD_FILE,
  CRD_NAME,
  EPISODE_CRD_FILE,
  EPISODE_CRD_NAME,
  agentEpisodeCrd,
  agentTaskCrd,
  allCrdsYaml,
  toStructuralSchema,
} from '../../controller/api/crd.ts';
import { API_VERSION, AgentTaskSpecSchema, KIND, MetadataSchema } from '../../controller/api/agent-task.ts';
import { ensureCluster, kubectl, repoRoot, skipCluster } from '../support/cluster.ts';
import { cliEntry } from '../support/cli-entry.ts';

type Node = Record<string, unknown>;

function openApiSchema(crd: object = agentTaskCrd()): Node {
  return (crd as { spec: { versions: { schema: { openAPIV3Schema: Node } }[] } }).spec.versions[0].schema
    .openAPIV3Schema;
}

/** Every violation of the apiserver's structural-schema rules, as "path: problem". */
function structuralViolations(node: Node, at = '$'): string[] {
  const problems: string[] = [];
  const preserves = node['x-kubernetes-preserve-unknown-fields'] === true;
  const intOrString = node['x-kubernetes-int-or-string'] === true;
  if (typeof node.type !== 'string' && !preserves && !intOrString) problems.push(`${at}: no type`);
  for (const keyword of ['anyOf', 'oneOf', 'allOf', 'not', '$ref', '$schema', 'const', 'propertyNames']) {
    if (keyword in node) problems.push(`${at}: ${keyword} is not allowed here`);
  }
  if (node.properties !== undefined && node.additionalProperties !== undefined) {
    problems.push(`${at}: additionalProperties next to properties`);
  }
  for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, Node>)) {
    problems.push(...structuralViolations(child, `${at}.${name}`));
  }
  if (node.items) problems.push(...structuralViolations(node.items as Node, `${at}[]`));
  if (typeof node.additionalProperties === 'object') {
    problems.push(...structuralViolations(node.additionalProperties as Node, `${at}{}`));
  }
  return problems;
}

describe('CRD generation', () => {
  it('the checked-in manifests equal the generated ones', async () => {
    assert.deepEqual(
      CRDS.map((c) => c.file),
      [CRD_FILE, EPISODE_CRD_FILE, BUDGET_CRD_FILE, TRIGGER_CRD_FILE, CREDENTIALS_CRD_FILE],
    );
    for (const crd of CRDS) {
      const checkedIn = await readFile(path.join(repoRoot, crd.file), 'utf8');
      assert.ok(checkedIn === crd.yaml(), `${crd.file} is stale: regenerate it with \`node scripts/gen-crds.ts\``);
    }
  });

  it('`episodic crd` prints them all, one YAML document each', () => {
    const printed = execFileSync(process.execPath, [cliEntry(), 'crd'], {
      encoding: 'utf8',
    });
    assert.equal(printed, allCrdsYaml());
    assert.deepEqual(
      printed.split(/^---$/m).map((doc) => /^ {2}name: (\S+)$/m.exec(doc)?.[1]),
      [CRD_NAME, EPISODE_CRD_NAME, BUDGET_CRD_NAME, TRIGGER_CRD_NAME, CREDENTIALS_CRD_NAME],
    );
  });

  it('is a structural schema', () => {
    assert.deepEqual(structuralViolations(openApiSchema()), []);
    assert.deepEqual(structuralViolations(openApiSchema(agentEpisodeCrd())), []);
  });

  it('AgentEpisode: the record is required and immutable (CEL), every string bounded for the rule’s cost', () => {
    const root = openApiSchema(agentEpisodeCrd()) as { properties: Record<string, Node>; required: string[] };
    assert.deepEqual(root.required, ['record']);
    const record = root.properties.record;
    assert.deepEqual(record['x-kubernetes-validations'], [
      { rule: 'self == oldSelf', message: 'an episode record is immutable' },
    ]);
    const unbounded: string[] = [];
    const walk = (node: Node, at: string) => {
      if (node.type === 'string' && node.enum === undefined && node.maxLength === undefined) unbounded.push(at);
      for (const [k, child] of Object.entries((node.properties ?? {}) as Record<string, Node>))
        walk(child, `${at}.${k}`);
      if (node.items) walk(node.items as Node, `${at}[]`);
    };
    walk(record, 'record');
    assert.deepEqual(unbounded, []);
  });

  it('leaves metadata unrestricted and keeps the CEL rule, defaults and enums', () => {
    const root = openApiSchema() as { properties: Record<string, Node> };
    assert.deepEqual(root.properties.metadata, { type: 'object' });
    const spec = root.properties.spec as { properties: Record<string, Node>; 'x-kubernetes-validations': unknown };
    assert.deepEqual(spec['x-kubernetes-validations'], [
      {
        rule: '(has(self.prompt) ? 1 : 0) + (has(self.promptFile) ? 1 : 0) + (has(self.steps) ? 1 : 0) + (has(self.stack) ? 1 : 0) == 1',
        message: 'exactly one of prompt or promptFile is required, or steps instead of both',
      },
    ]);
    assert.equal(spec.properties.workspace['x-kubernetes-preserve-unknown-fields'], true);
    assert.match(String(spec.properties.workspace.description), /\{git\}/);
    const agent = spec.properties.agent as { properties: Record<string, Node> };
    assert.equal(agent.properties.promptVia.default, 'stdin');
    assert.deepEqual(agent.properties.promptVia.enum, ['stdin', 'argument', 'file']);
  });

  it('translates nullable unions and exclusive bounds, and refuses what it cannot translate', () => {
    assert.deepEqual(toStructuralSchema({ anyOf: [{ type: 'integer' }, { type: 'null' }] }), {
      type: 'integer',
      nullable: true,
    });
    assert.deepEqual(toStructuralSchema({ type: 'number', exclusiveMinimum: 0 }), {
      type: 'number',
      minimum: 0,
      exclusiveMinimum: true,
    });
    assert.throws(() => toStructuralSchema({ type: 'object', patternProperties: {} }), /patternProperties/);
    assert.throws(() => toStructuralSchema({ description: 'untyped' }), /no type/);
  });
});

const skip = skipCluster;

describe('AgentTask CRD on a real kube-apiserver', { skip }, () => {
  // Unique per run: without kube-controller-manager a deleted namespace stays Terminating forever.
  const ns = `crd-test-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  let clusterReady = false;

  const task = (name: string, spec: Node): Node => ({ apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec });
  const validSpec = (): Node => ({
    prompt: 'Make the tests pass. Say <promise>COMPLETE</promise> when done.',
    agent: { command: ['claude', '-p', '--output-format', 'stream-json', '--verbose'], image: 'example/agent:1' },
    workspace: { git: { url: 'https://example.com/repo.git', ref: 'main' } },
  });
  const apply = (obj: Node) => kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(obj) });
  const rejection = async (obj: Node): Promise<string> => {
    const err = await apply(obj).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(err, 'the apiserver accepted an invalid AgentTask');
    return err.message;
  };

  before(
    async () => {
      await ensureCluster();
      clusterReady = true;
      // Server-side, like every other test and helm: a client-side apply would own fields helm's apply then conflicts on.
      await kubectl([
        'apply',
        '--server-side',
        '--force-conflicts',
        '-f',
        path.join(repoRoot, CRD_FILE),
        '-f',
        path.join(repoRoot, EPISODE_CRD_FILE),
      ]);
      await kubectl([
        'wait',
        '--for=condition=Established',
        '--timeout=60s',
        `crd/${CRD_NAME}`,
        `crd/${EPISODE_CRD_NAME}`,
      ]);
      await kubectl(['create', 'namespace', ns]);
    },
    { timeout: 90 * 60_000 },
  );

  after(async () => {
    if (!clusterReady) return;
    await kubectl(['delete', 'agenttasks,agentepisodes', '--all', '-n', ns, '--wait=false']);
    await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('is Established with the names and the status subresource', async () => {
    const crd = JSON.parse(await kubectl(['get', 'crd', CRD_NAME, '-o', 'json']));
    const established = crd.status.conditions.find((c: Node) => c.type === 'Established');
    assert.equal(established.status, 'True');
    const nonStructural = crd.status.conditions.find((c: Node) => c.type === 'NonStructuralSchema');
    assert.equal(nonStructural, undefined, JSON.stringify(nonStructural));
    assert.deepEqual(crd.status.acceptedNames.shortNames, ['at']);
    assert.deepEqual(crd.spec.versions[0].subresources, { status: {} });
  });

  it('accepts a valid AgentTask and fills in the same defaults zod would', async () => {
    await apply(task('valid', validSpec()));
    const stored = JSON.parse(await kubectl(['get', 'agenttask', 'valid', '-n', ns, '-o', 'json']));
    assert.equal(stored.spec.limits.maxEpisodes, 20);
    assert.equal(stored.spec.agent.promptVia, 'stdin');
    assert.equal(stored.spec.completion.promise, 'COMPLETE');
    assert.deepEqual(stored.spec.dependsOn, []);
    assert.deepEqual(stored.spec.history, { keep: 100 });
    // The apiserver's defaulting and zod's agree: parsing adds nothing.
    assert.deepEqual(AgentTaskSpecSchema.parse(stored.spec), stored.spec);
  });

  it('rejects a missing agent command, naming the field', async () => {
    const spec = validSpec();
    spec.agent = { image: 'example/agent:1' };
    assert.match(await rejection(task('no-command', spec)), /spec\.agent\.command: Required value/);
  });

  it('rejects both prompt and promptFile with the CEL message', async () => {
    const both = { ...validSpec(), promptFile: 'PROMPT.md' };
    assert.match(
      await rejection(task('both-prompts', both)),
      /spec: Invalid value.*exactly one of prompt or promptFile/,
    );
    const neither = validSpec();
    delete neither.prompt;
    assert.match(await rejection(task('no-prompt', neither)), /exactly one of prompt or promptFile is required/);
  });

  it('accepts a pipeline without defaults inside its steps; refuses duplicate step names, a step without a prompt and steps beside a prompt', async () => {
    const { prompt: _prompt, ...base } = validSpec();
    const steps = [
      { name: 'plan', prompt: 'plan it', agent: { command: ['planner'] }, completion: { promise: 'PLANNED' } },
      { name: 'build', promptFile: 'BUILD.md', limits: { maxEpisodes: 3 } },
    ];
    await apply(task('pipeline', { ...base, steps }));
    const stored = JSON.parse(await kubectl(['get', 'agenttask', 'pipeline', '-n', ns, '-o', 'json']));
    // A step's unset field means the task's: the apiserver must not fill in a default there.
    assert.deepEqual(stored.spec.steps, steps);
    assert.deepEqual(AgentTaskSpecSchema.parse(stored.spec), stored.spec);

    const twice = [steps[0], { ...steps[1], name: 'plan' }];
    assert.match(await rejection(task('twice', { ...base, steps: twice })), /step names must be unique/);
    const noPrompt = [{ name: 'plan' }];
    assert.match(
      await rejection(task('no-step-prompt', { ...base, steps: noPrompt })),
      /spec\.steps\[0\]: Invalid value.*exactly one of prompt or promptFile is required/,
    );
    assert.match(
      await rejection(task('steps-and-prompt', { ...validSpec(), steps })),
      /exactly one of prompt or promptFile is required, or steps instead of both/,
    );
    assert.match(
      await rejection(task('bad-step-name', { ...base, steps: [{ name: 'Plan_1', prompt: 'p' }] })),
      /spec\.steps\[0\]\.name: Invalid value/,
    );
  });

  it('rejects an unknown promptVia, listing the allowed values', async () => {
    const spec = validSpec();
    spec.agent = { command: ['claude'], promptVia: 'carrier-pigeon' };
    assert.match(
      await rejection(task('bad-prompt-via', spec)),
      /spec\.agent\.promptVia: Unsupported value: "carrier-pigeon": supported values: "stdin", "argument", "file"/,
    );
  });

  it('rejects an unknown field, naming it: a typo never silently lifts a cap (strict field validation)', async () => {
    const spec = { ...validSpec(), limits: { maxEpisode: 3 } };
    assert.match(
      await rejection(task('typo', spec)),
      /strict decoding error: unknown field "spec\.limits\.maxEpisode"/,
    );
  });

  it('rejects a name no pod label could carry (64 characters, dots), as validate does; accepts 63', async () => {
    const long = `t${'x'.repeat(63)}`;
    assert.match(
      await rejection(task(long, validSpec())),
      /metadata\.name must be a lowercase RFC 1123 label of at most 63 characters/,
    );
    assert.match(await rejection(task('has.dots', validSpec())), /metadata\.name must be a lowercase RFC 1123 label/);
    await apply(task(long.slice(0, 63), validSpec()));
    assert.equal(
      JSON.parse(await kubectl(['get', 'at', long.slice(0, 63), '-n', ns, '-o', 'json'])).metadata.name.length,
      63,
    );
    // The same names locally: one rule in both places.
    assert.throws(() => MetadataSchema.parse({ name: long }));
    assert.throws(() => MetadataSchema.parse({ name: 'has.dots' }));
    assert.doesNotThrow(() => MetadataSchema.parse({ name: long.slice(0, 63) }));
  });

  it('shows the printer columns via the short name, and more with -o wide', async () => {
    await apply(task('columns', validSpec()));
    const status = {
      phase: 'Waiting',
      reason: 'EpisodeContinue',
      episodes: 3,
      costUSD: 1.25,
      lastEpisode: { number: 3, outcome: 'continue' },
      nextEpisodeAt: '2030-01-02T03:04:05Z',
      progress: { done: 6, skipped: 1, total: 12, summary: '7/12' },
      step: { index: 2, name: 'implement', summary: '2/4 implement' },
    };
    await kubectl([
      'patch',
      'at',
      'columns',
      '-n',
      ns,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status }),
    ]);

    const [header, row] = (await kubectl(['get', 'at', 'columns', '-n', ns])).trim().split('\n');
    assert.deepEqual(header.split(/\s{2,}/), [
      'NAME',
      'PHASE',
      'EPISODES',
      'COST',
      'REASON',
      'STEP',
      'PROGRESS',
      'PARENT',
      'AGE',
    ]);
    assert.deepEqual(row.split(/\s{2,}/).slice(0, 7), [
      'columns',
      'Waiting',
      '3',
      '1.25',
      'EpisodeContinue',
      '2/4 implement',
      '7/12',
    ]);

    const [wideHeader, wideRow] = (await kubectl(['get', 'at', 'columns', '-n', ns, '-o', 'wide'])).trim().split('\n');
    assert.deepEqual(wideHeader.split(/\s{2,}/), [
      'NAME',
      'PHASE',
      'EPISODES',
      'COST',
      'REASON',
      'STEP',
      'PROGRESS',
      'PARENT',
      'AGE',
      'LAST OUTCOME',
      'NEXT EPISODE',
    ]);
    assert.deepEqual(wideRow.split(/\s+/).slice(-2), ['continue', '2030-01-02T03:04:05Z']);

    // The category lists it too (`kubectl get episodic`), by kind once AgentBudgets are in it as well.
    assert.match(
      await kubectl(['get', 'episodic', '-n', ns]),
      /^(agenttask\.episodic\.dev\/)?columns\s+Waiting\s+3\b/m,
    );
  });

  it('stores a null exit code in status and applies status defaults', async () => {
    await apply(task('nullable', validSpec()));
    const patch = [
      { op: 'add', path: '/status', value: { lastEpisode: { number: 1, outcome: 'failed', exitCode: null } } },
    ];
    await kubectl([
      'patch',
      'at',
      'nullable',
      '-n',
      ns,
      '--subresource=status',
      '--type=json',
      '-p',
      JSON.stringify(patch),
    ]);
    const stored = JSON.parse(await kubectl(['get', 'at', 'nullable', '-n', ns, '-o', 'json']));
    assert.equal(stored.status.lastEpisode.exitCode, null);
    assert.equal(stored.status.episodes, 0);
    assert.deepEqual(stored.status.conditions, []);
  });

  it('AgentEpisode: Established as `ae`, printer columns, and a record that cannot be changed', async () => {
    const crd = JSON.parse(await kubectl(['get', 'crd', EPISODE_CRD_NAME, '-o', 'json']));
    assert.deepEqual(crd.status.acceptedNames.shortNames, ['ae']);
    assert.equal(
      crd.status.conditions.find((c: Node) => c.type === 'NonStructuralSchema'),
      undefined,
    );
    const episode = {
      apiVersion: API_VERSION,
      kind: 'AgentEpisode',
      metadata: { name: 'fix-ep-3', labels: { 'episodic.dev/task': 'fix' } },
      record: {
        task: 'fix',
        number: 3,
        outcome: 'failed',
        reason: 'Backoff',
        exitCode: null,
        costUSD: 0.42,
        evidence: { workspace: { kind: 'git', changed: true, headAfter: 'abc000', commit: 'abc123' } },
      },
    };
    // create, not apply: client-side apply drops the null exit code.
    await kubectl(['create', '-n', ns, '-f', '-'], { input: JSON.stringify(episode) });
    const [header, row] = (await kubectl(['get', 'ae', '-n', ns, '-l', 'episodic.dev/task=fix'])).trim().split('\n');
    assert.deepEqual(header.split(/\s{2,}/), ['NAME', 'TASK', 'EPISODE', 'OUTCOME', 'COST', 'AGE']);
    assert.deepEqual(row.split(/\s+/).slice(0, 5), ['fix-ep-3', 'fix', '3', 'failed', '0.42']);
    assert.match(
      await kubectl(['get', 'ae', 'fix-ep-3', '-n', ns, '-o', 'wide']),
      /EXIT\s+REASON\s+COMMIT[\s\S]*Backoff\s+abc123/,
    );
    const stored = JSON.parse(await kubectl(['get', 'ae', 'fix-ep-3', '-n', ns, '-o', 'json']));
    assert.equal(stored.record.exitCode, null);
    assert.deepEqual(stored.record.tokens, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, 'schema defaults');
    await assert.rejects(
      kubectl(['patch', 'ae', 'fix-ep-3', '-n', ns, '--type=merge', '-p', '{"record":{"costUSD":0}}']),
      /an episode record is immutable/,
    );
    // Labels stay editable (they are how records are found), the record does not.
    await kubectl(['label', 'ae', 'fix-ep-3', '-n', ns, 'reviewed=yes']);
    assert.equal(JSON.parse(await kubectl(['get', 'ae', 'fix-ep-3', '-n', ns, '-o', 'json'])).record.costUSD, 0.42);
    // Not in the `episodic` category: `kubectl get episodic` stays a view of the tasks, not of every record.
    assert.doesNotMatch(await kubectl(['get', 'episodic', '-n', ns]), /fix-ep-3/);
  });
});
