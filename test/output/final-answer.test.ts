// The sentinel counts only in the agent's final answer, never in an echo of the prompt (which usually names
// the sentinel as an instruction); RALPH_STATUS fields and completion keywords are read from the same answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { completionKeywords, ralphStatus, withoutPromptEcho } from '../../controller/executors/output/final-answer.ts';
import { createOutputAnalyzer } from '../../controller/executors/output/index.ts';
import type { AnalyzerOptions, OutputAnalysis, OutputSetting } from '../../controller/executors/output/types.ts';

const PROMPT = [
  'Fix the failing tests in src/.',
  '',
  'When every test passes, print <promise>DONE</promise>.',
  'Otherwise say what is left.',
].join('\n');

function analyse(
  format: OutputSetting,
  lines: (string | object)[],
  extra: Partial<AnalyzerOptions> = {},
  exitCode = 0,
): OutputAnalysis {
  const analyzer = createOutputAnalyzer({ format, promise: 'DONE', prompt: PROMPT, ...extra });
  for (const line of lines) analyzer.write(`${typeof line === 'string' ? line : JSON.stringify(line)}\n`, 'stdout');
  return analyzer.finish({ exitCode });
}

test('text: a prompt echoed before the answer does not complete the task', () => {
  const a = analyse('text', [PROMPT, '', 'I fixed two tests; one still fails.']);
  assert.equal(a.completion, undefined);
  assert.equal(a.message, 'I fixed two tests; one still fails.');
});

test('text: the echo is recognised with indentation, CRLF and colours, and more than once', () => {
  const echoed = PROMPT.split('\n').map((l) => `  \u001b[2m${l}\u001b[0m\r`);
  const a = analyse('text', [...echoed, 'working…', ...echoed, 'still working']);
  assert.equal(a.completion, undefined);
  assert.equal(a.message, 'working… still working');
});

test('text: the answer still counts after an echo; a repeated prompt sentence with the sentinel does not', () => {
  assert.equal(analyse('text', [PROMPT, 'All green. <promise>DONE</promise>']).completion, 'promise');
  // The prompt's sentence that names the sentinel is a copy of the instruction, not a claim (issue 18).
  assert.equal(
    analyse('text', [PROMPT, 'When every test passes, print <promise>DONE</promise>.']).completion,
    undefined,
  );
  // The sentinel alone: the agent printing what it was told to print.
  assert.equal(
    analyse('text', ['<promise>DONE</promise>'], { prompt: 'print <promise>DONE</promise>' }).completion,
    'promise',
  );
});

test('text: no prompt given behaves as before (the tail is the answer)', () => {
  assert.equal(analyse('text', [PROMPT], { prompt: undefined }).completion, 'promise');
});

test('text: a tail that starts inside an echo (long output) ignores the rest of the echo', () => {
  const longPrompt = [
    ...Array.from({ length: 200 }, (_, i) => `context line ${i} ${'x'.repeat(40)}`),
    'Finish with <promise>DONE</promise>',
  ].join('\n');
  const analyzer = createOutputAnalyzer({ format: 'text', promise: 'DONE', prompt: longPrompt }, { tailBytes: 2048 });
  analyzer.write(`${longPrompt}\nnot yet\n`, 'stdout');
  const a = analyzer.finish({ exitCode: 0 });
  assert.equal(a.completion, undefined);
  assert.equal(a.message, 'not yet');
  // The same with a short output that was never cut: the last prompt line alone is an answer.
  assert.equal(
    withoutPromptEcho('Finish with <promise>DONE</promise>', longPrompt, false),
    'Finish with <promise>DONE</promise>',
  );
  assert.equal(withoutPromptEcho('ine 199\nFinish with <promise>DONE</promise>\nok', longPrompt, true), 'ok');
});

test('claude stream-json: the prompt in a user event is not the answer', () => {
  const a = analyse('auto', [
    { type: 'system', subtype: 'init', session_id: 's', model: 'm' },
    { type: 'user', message: { role: 'user', content: [{ type: 'text', text: PROMPT }] } },
    {
      type: 'assistant',
      message: { id: 'a1', role: 'assistant', content: [{ type: 'text', text: 'One test still fails.' }] },
    },
    { type: 'result', subtype: 'success', is_error: false, result: 'One test still fails.', total_cost_usd: 0.01 },
  ]);
  assert.equal(a.format, 'claude');
  assert.equal(a.completion, undefined);
  // Cut before the result: the last assistant text, still not the user event.
  const cut = analyse(
    'claude',
    [
      { type: 'user', message: { role: 'user', content: PROMPT } },
      { type: 'assistant', message: { id: 'a1', role: 'assistant', content: 'working' } },
    ],
    {},
    1,
  );
  assert.equal(cut.completion, undefined);
});

test('codex: only the last agent message is the answer, not a user item or the prompt in a command', () => {
  const a = analyse('auto', [
    { type: 'thread.started', thread_id: 't' },
    { type: 'turn.started' },
    { type: 'item.completed', item: { id: 'i0', type: 'user_message', text: PROMPT } },
    {
      type: 'item.completed',
      item: {
        id: 'i1',
        type: 'command_execution',
        command: 'cat PROMPT.md',
        aggregated_output: PROMPT,
        exit_code: 0,
        status: 'completed',
      },
    },
    { type: 'item.completed', item: { id: 'i2', type: 'agent_message', text: 'Two tests still fail.' } },
    { type: 'turn.completed', usage: { input_tokens: 10, cached_input_tokens: 0, output_tokens: 5 } },
  ]);
  assert.equal(a.format, 'codex');
  assert.equal(a.completion, undefined);
});

const T = '2026-11-23T12:00:00.000Z';

test('gemini: a user message (stream-json) is not the answer', () => {
  const a = analyse('auto', [
    { type: 'init', timestamp: T, session_id: 's', model: 'gemini-2.5-pro' },
    { type: 'message', timestamp: T, role: 'user', content: PROMPT },
    { type: 'message', timestamp: T, role: 'assistant', content: 'Not done yet.', delta: true },
    { type: 'result', timestamp: T, status: 'success', stats: { total_tokens: 10, input_tokens: 6, output_tokens: 4 } },
  ]);
  assert.equal(a.format, 'gemini');
  assert.equal(a.completion, undefined);
});

test('RALPH_STATUS fields come from the last block of the final answer', () => {
  const block = (exit: string, work: string) =>
    `---RALPH_STATUS---\nSTATUS: IN_PROGRESS\nTASKS_COMPLETED_THIS_LOOP: 3\nFILES_MODIFIED: 0\nTESTS_STATUS: PASSING\nWORK_TYPE: ${work}\nEXIT_SIGNAL: ${exit}\n---END_RALPH_STATUS---`;
  assert.deepEqual(ralphStatus(`${block('true', 'IMPLEMENTATION')}\nlater:\n${block('false', 'TESTING')}`), {
    status: 'IN_PROGRESS',
    exitSignal: false,
    tasksCompleted: 3,
    filesModified: 0,
    testsStatus: 'PASSING',
    workType: 'TESTING',
  });
  assert.deepEqual(ralphStatus('---RALPH_STATUS---\n**EXIT_SIGNAL**: **true**\n---END_RALPH_STATUS---'), {
    exitSignal: true,
  });
  assert.equal(ralphStatus('no block here'), undefined);
  const a = analyse('text', [block('true', 'TESTING')]);
  assert.equal(a.ralph?.workType, 'TESTING');
  assert.equal(a.completion, 'exitSignal');
});

test('completion keywords: phrases that say the whole job is done, each once, only with completion.signals', () => {
  assert.deepEqual(completionKeywords('All tasks are complete and there is nothing left to do. All done!'), [
    'all tasks complete',
    'nothing left to do',
    'all done',
  ]);
  assert.deepEqual(completionKeywords('The task is complete.'), ['task is complete']);
  assert.deepEqual(completionKeywords('The subtask is complete; the task is not complete. Step 2 done.'), []);
  assert.deepEqual(analyse('text', ['The task is complete.'], { signals: true }).keywords, ['task is complete']);
  assert.equal(analyse('text', ['The task is complete.']).keywords, undefined);
  // Keywords in the echoed prompt do not count either.
  assert.equal(
    analyse('text', ['Say "all tasks complete" when all tasks complete.', 'working'], {
      signals: true,
      prompt: 'Say "all tasks complete" when all tasks complete.',
    }).keywords,
    undefined,
  );
});
