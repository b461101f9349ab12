// Issue 18 item 1: a signal counts nowhere it stands inside a copy of the prompt, however the copy is laid
// out (a prefix on its first line, re-wrapped, quoted, only the sentence that names the sentinel), in every
// output setting; the sentinel alone, or after the echo, still counts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerWithoutPrompt } from '../../controller/executors/output/final-answer.ts';
import { createOutputAnalyzer } from '../../controller/executors/output/index.ts';
import type { AnalyzerOptions, OutputAnalysis, OutputSetting } from '../../controller/executors/output/types.ts';

const PROMPT = [
  'Fix the failing tests in src/.',
  '',
  'When every test passes, print <promise>DONE</promise>.',
  'Otherwise say what is left.',
].join('\n');
const NOT_YET = 'Working on it, not finished yet.';

function analyse(format: OutputSetting, stdout: string, extra: Partial<AnalyzerOptions> = {}): OutputAnalysis {
  const analyzer = createOutputAnalyzer({ format, promise: 'DONE', prompt: PROMPT, ...extra });
  analyzer.write(stdout, 'stdout');
  return analyzer.finish({ exitCode: 0 });
}

const rewrapped = PROMPT.replace(/\n+/g, ' ').replace(/ (every|print|say)/g, '\n   $1');
const echoes: Record<string, string> = {
  'prefixed on its first line': `Prompt was: ${PROMPT}\n${NOT_YET}`,
  'prefixed, on one line': `Prompt was: ${PROMPT.replace(/\n+/g, ' ')} ${NOT_YET}`,
  're-wrapped with other whitespace': `${rewrapped}\n\n${NOT_YET}`,
  'quoted with "> "': `You asked:\n${PROMPT.split('\n')
    .map((l) => `> ${l}`)
    .join('\n')}\n${NOT_YET}`,
  'in bold and backticks': `**Task:** \`${PROMPT.replace(/\n+/g, ' ')}\`\n${NOT_YET}`,
  'only the sentence that names the sentinel': `I will do as told: when every test passes, print <promise>DONE</promise>.\n${NOT_YET}`,
  'that sentence re-wrapped, mid-line': `Noted - When every test\npasses, print\n<promise>DONE</promise>. ${NOT_YET}`,
};

for (const [how, stdout] of Object.entries(echoes)) {
  test(`an echo ${how} gives no completion, in every output setting`, () => {
    for (const format of ['text', 'auto', 'claude', 'codex', 'gemini'] as const) {
      const a = analyse(format, stdout);
      assert.equal(a.format, 'text', format);
      assert.equal(a.completion, undefined, `${format}: ${a.message}`);
      assert.match(a.message ?? '', /not finished yet\.$/, format);
    }
  });
}

test('the message of a prefixed echo keeps the prefix and the answer, not the prompt', () => {
  assert.equal(analyse('text', echoes['prefixed on its first line'] as string).message, `Prompt was: ${NOT_YET}`);
});

test('the sentinel on its own, or after an echo, still counts', () => {
  const claims = [
    '<promise>DONE</promise>',
    `All tests pass.\n<promise>DONE</promise>`,
    `Prompt was: ${PROMPT}\nAll tests pass now.\n<promise>DONE</promise>`,
    `Prompt was: ${PROMPT}\n<promise>DONE</promise>`,
    `${rewrapped}\nEverything passes. <promise>DONE</promise>`,
    // Words of the prompt's sentence, but not all of it: the agent's own sentence.
    'Every test passes, so: <promise>DONE</promise>',
  ];
  for (const stdout of claims) assert.equal(analyse('text', stdout).completion, 'promise', stdout);
});

test('a sentinel on a line of its own in the prompt: a copy of the line before it is an echo', () => {
  const prompt = 'Fix the tests.\nWhen every test passes, print this line:\n<promise>DONE</promise>\n';
  const run = (stdout: string) => analyse('text', stdout, { prompt }).completion;
  assert.equal(run('When every test passes, print this line: <promise>DONE</promise>\nnot yet'), undefined);
  assert.equal(run('Here it is:\n<promise>DONE</promise>'), 'promise');
  assert.equal(run('Fixed. <promise>DONE</promise>'), 'promise');
});

test('a JSON final answer that quotes the instruction does not complete either', () => {
  const result = (text: string) =>
    analyse(
      'auto',
      `${JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: text, session_id: 's' })}\n`,
    );
  const quoted = result('You said: when every test passes, print <promise>DONE</promise>. Two still fail.');
  assert.equal(quoted.format, 'claude');
  assert.equal(quoted.completion, undefined);
  assert.equal(result('All pass. <promise>DONE</promise>').completion, 'promise');
});

test('status blocks and completion phrases inside a copy of the prompt do not count', () => {
  const prompt = [
    'Work on the plan. When all tasks are complete, end your answer with:',
    '---RALPH_STATUS---',
    'STATUS: COMPLETE',
    'EXIT_SIGNAL: true',
    '---END_RALPH_STATUS---',
  ].join('\n');
  const echo = `Instructions: ${prompt}\nStill on task 2.`;
  const a = analyse('text', echo, { prompt, signals: true });
  assert.equal(a.completion, undefined);
  assert.equal(a.ralph, undefined);
  assert.equal(a.keywords, undefined);
  // Only the sentence before the block, then the block as told: the agent's answer.
  const done = `All tasks are complete, end of the work.\n${prompt.split('\n').slice(1).join('\n')}`;
  const b = analyse('text', done, { prompt, signals: true });
  assert.equal(b.completion, 'exitSignal');
  assert.deepEqual(b.keywords, ['all tasks complete']);
});

test('a tail that starts inside a quoted echo of a long prompt', () => {
  const prompt = [
    ...Array.from({ length: 200 }, (_, i) => `context line ${i} ${'x'.repeat(40)}`),
    'Finish with <promise>DONE</promise> once all of it is done.',
  ].join('\n');
  const analyzer = createOutputAnalyzer({ format: 'text', promise: 'DONE', prompt }, { tailBytes: 2048 });
  analyzer.write(`${prompt.replace(/^/gm, '> ')}\nnot yet\n`, 'stdout');
  const a = analyzer.finish({ exitCode: 0 });
  assert.equal(a.completion, undefined);
  assert.equal(a.message, 'not yet');
});

test('answerWithoutPrompt: no prompt, no change; the sentinel in a copy is blanked, not the text around it', () => {
  assert.equal(answerWithoutPrompt('a <promise>DONE</promise>', undefined, 'DONE'), 'a <promise>DONE</promise>');
  assert.equal(
    answerWithoutPrompt('Told: when every test passes, print <promise>DONE</promise>. Next.', PROMPT, 'DONE'),
    'Told: when every test passes, print …. Next.',
  );
});

test('a prompt of a few words is cut only where it stands on a line of its own', () => {
  const run = (stdout: string) => analyse('text', stdout, { prompt: 'Continue the work.' }).message;
  assert.equal(run('I will continue the work on the parser.'), 'I will continue the work on the parser.');
  assert.equal(run('> Continue the work.\nParser done.'), 'Parser done.');
});
