import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { renderPrompt } from '../../controller/executors/prompt.ts';

const vars = { task: 'login-api', episode: 3, maxEpisodes: 20, lastEpisodeMessage: 'tests fail: 2 of 48' };

test('fills task, episode, maxEpisodes and lastEpisode.message', () => {
  const out = renderPrompt('Task {{task}}, episode {{episode}}/{{maxEpisodes}}. Last: {{lastEpisode.message}}', vars);
  assert.equal(out, 'Task login-api, episode 3/20. Last: tests fail: 2 of 48');
});

test('tolerates spaces inside the braces and repeats', () => {
  assert.equal(renderPrompt('{{ task }} {{task}}', vars), 'login-api login-api');
});

test('leaves unknown placeholders and non-placeholders untouched', () => {
  const text = 'Keep {{unknown}}, {{lastEpisode.other}}, {{ }}, {single} and {{{task}}}';
  assert.equal(renderPrompt(text, vars), 'Keep {{unknown}}, {{lastEpisode.other}}, {{ }}, {single} and {login-api}');
});

test('an absent last message renders as empty; values are not expanded again', () => {
  assert.equal(renderPrompt('[{{lastEpisode.message}}]', { ...vars, lastEpisodeMessage: undefined }), '[]');
  assert.equal(
    renderPrompt('{{lastEpisode.message}}', { ...vars, lastEpisodeMessage: 'said {{task}}' }),
    'said {{task}}',
  );
});

test('does not treat inherited object keys as variables', () => {
  assert.equal(renderPrompt('{{constructor}} {{toString}}', vars), '{{constructor}} {{toString}}');
});

test('a fix episode: the gate section follows the step prompt, unless the prompt places {{gate.…}} itself', () => {
  const base = { task: 't', episode: 2, maxEpisodes: 5 };
  const gate = { name: 'test', output: 'not ok 1 {{task}}' };
  const out = renderPrompt('Build {{task}}.', { ...base, gate });
  assert.ok(out.startsWith('Build t.\n'));
  assert.match(out, /The gate "test" checked your work and failed/);
  assert.match(out, /```\nnot ok 1 \{\{task\}\}\n```/); // the output is rendered verbatim, never expanded
  assert.equal(renderPrompt('Fix {{gate.name}}: {{ gate.output }}', { ...base, gate }), 'Fix test: not ok 1 {{task}}');
  assert.equal(renderPrompt('Build {{task}}. {{gate.name}}', base), 'Build t. {{gate.name}}');
});
