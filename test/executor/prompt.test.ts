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
