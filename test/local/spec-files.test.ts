// Reading spec files: YAML errors name the file, the document and the line; a broken document does not take
// the good ones in the same file down; values follow the YAML 1.2 core schema, like kubectl.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { parseSpecText } from '../../controller/sources/local/spec-files.ts';

const task = (name: string, extra = '') =>
  `apiVersion: episodic.dev/v1alpha1\nkind: AgentTask\nmetadata:\n  name: ${name}\nspec:\n  prompt: hi\n  agent:\n    command: [agent]\n${extra}`;

test('a syntax error names the file, the document and the line', () => {
  const out = parseSpecText('tasks/x.yaml', `${task('a')}---\nkind: AgentTask\nmetadata: [\n`);
  assert.deepEqual([...out.tasks.map((t) => t.name)], ['a'], 'the good document still loads');
  assert.equal(out.errors.length, 1, out.errors.join('\n'));
  assert.match(out.errors[0], /^tasks\/x\.yaml \(document 2\): YAML: .* at line \d+, column \d+/);
});

test('duplicate keys and tab indentation are errors, not silently last-wins', () => {
  const dup = parseSpecText('d.yaml', task('a').replace('  name: a\n', '  name: a\n  name: b\n'));
  assert.equal(dup.tasks.length, 0);
  assert.match(dup.errors.join('\n'), /^d\.yaml: YAML: Map keys must be unique at line 5/);
  const tab = parseSpecText('t.yaml', task('a').replace('  prompt: hi', '\tprompt: hi'));
  assert.equal(tab.tasks.length, 0);
  assert.match(tab.errors.join('\n'), /^t\.yaml: YAML: .*[Tt]ab/);
});

test('scalars follow the YAML 1.2 core schema: dates and yes/no stay strings', () => {
  const out = parseSpecText(
    's.yaml',
    task('a').replace('prompt: hi', 'prompt: 2026-01-01').concat('  dependsOn: [yes, "no"]\n'),
  );
  assert.deepEqual(out.errors, []);
  assert.equal(out.tasks[0].spec?.prompt, '2026-01-01');
  assert.deepEqual(out.tasks[0].spec?.dependsOn, ['yes', 'no']);
});

test('an unknown tag is read as its plain value, as before', () => {
  const out = parseSpecText('u.yaml', task('a').replace('prompt: hi', 'prompt: !custom hi'));
  assert.deepEqual(out.errors, []);
  assert.equal(out.tasks[0].spec?.prompt, 'hi');
});

test('many documents in one file, other kinds ignored, an empty trailing document skipped', () => {
  const text = `${task('a')}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n${task('b')}---\n`;
  const out = parseSpecText('m.yaml', text);
  assert.deepEqual(out.errors, []);
  assert.deepEqual(
    out.tasks.map((t) => t.name),
    ['a', 'b'],
  );
  assert.deepEqual(out.ignored, ['m.yaml (document 2): kind ConfigMap']);
});

test('a self-referencing alias is an error naming the file; the good document beside it loads', () => {
  const out = parseSpecText(
    'loop.yaml',
    `${task('a')}---\n${task('b').replace('spec:', 'spec: &s\n  self: *s\n  x:')}`,
  );
  assert.deepEqual(
    out.tasks.map((t) => t.name),
    ['a'],
  );
  assert.equal(out.errors.length, 1);
  assert.match(out.errors[0], /^loop\.yaml \(document 2\): .*(cycle|alias)/i);
});

test('an alias bomb (10^9 nodes from a few hundred bytes) is refused at once, not expanded', () => {
  const bomb = [
    'a: &a ["x","x","x","x","x","x","x","x","x","x"]',
    ...'bcdefghi'.split('').map(
      (k, i) =>
        `${k}: &${k} [${Array(10)
          .fill(`*${String.fromCharCode(97 + i)}`)
          .join(',')}]`,
    ),
  ].join('\n');
  const out = parseSpecText('bomb.yaml', `${task('a')}---\n${bomb}\n`); // expanded, this would not return
  assert.deepEqual(
    out.tasks.map((t) => t.name),
    ['a'],
  );
  assert.match(out.errors.join('\n'), /bomb\.yaml \(document 2\): .*alias/i);
});

test('a file over 1 MB is refused with its name, unparsed', () => {
  const out = parseSpecText('huge.yaml', `${task('a')}# ${'x'.repeat(1024 * 1024)}\n`);
  assert.deepEqual(out.tasks, []);
  assert.match(out.errors[0], /^huge\.yaml: larger than 1048576 bytes/);
});
