// readsMailbox: a task's mailbox is read for the episode that would start from a status when that episode's
// prompt can use it — the current step's prompt or promptFile, the stack's frames, the task's prompt — or when
// it waits for (wake: onMessage) or is interrupted by messages. A step or frame that comes up in a pass is read by
// the next pass (spawn-decide.test.ts, ReadingMailbox).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgentTaskSpecSchema, emptyStatus } from '../../controller/api/agent-task.ts';
import type { AgentTaskSpec, AgentTaskStatus } from '../../controller/api/agent-task.ts';
import { readsMailbox } from '../../controller/reconciler/mail.ts';
import { stackStatus } from '../../controller/reconciler/stack.ts';

const agent = { command: ['agent'] };
const spec = (over: Record<string, unknown>): AgentTaskSpec => AgentTaskSpecSchema.parse({ agent, ...over });
const inStep = (index: number, name: string): AgentTaskStatus => ({ ...emptyStatus(), step: { index, name } });
const withFrames = (...frames: string[]): AgentTaskStatus => ({ ...emptyStatus(), stack: stackStatus(frames) });
const PIPELINE = spec({
  steps: [
    { name: 'plan', prompt: 'plan it' },
    { name: 'reply', prompt: 'answer these:\n{{ messages }}' },
    { name: 'file', promptFile: 'NEXT.md' },
  ],
});

const table: Array<[string, AgentTaskSpec | undefined, AgentTaskStatus | undefined, boolean]> = [
  ['no spec', undefined, undefined, false],
  ['a prompt without {{messages}}', spec({ prompt: 'do it' }), undefined, false],
  ['a prompt naming {{messages}}', spec({ prompt: 'read {{messages}}' }), undefined, true],
  ['a prompt naming {{ messages }} with spaces', spec({ prompt: 'read {{ messages }}' }), undefined, true],
  ['another placeholder only', spec({ prompt: '{{messages.count}} {{children}}' }), undefined, false],
  ['a promptFile (its text is read at the start)', spec({ promptFile: 'P.md' }), undefined, true],
  ['wake: onMessage', spec({ prompt: 'do it', wake: 'onMessage' }), undefined, true],
  ['interrupt', spec({ prompt: 'do it', interrupt: true }), undefined, true],
  ['pipeline before its first pass: step 1', PIPELINE, undefined, false],
  ['pipeline in step 1 (plain prompt)', PIPELINE, inStep(1, 'plan'), false],
  ['pipeline in step 2 (its prompt names {{messages}})', PIPELINE, inStep(2, 'reply'), true],
  ['pipeline in step 3 (a promptFile)', PIPELINE, inStep(3, 'file'), true],
  ['pipeline step found by name after an edit', PIPELINE, inStep(1, 'reply'), true],
  ['a stack before its first pass: spec.stack', spec({ stack: ['a', 'b {{messages}}'] }), undefined, true],
  ['a stack whose frames name it (as context)', spec({ stack: ['a'] }), withFrames('top', 'below {{messages}}'), true],
  ['a stack whose frames do not', spec({ stack: ['a {{messages}}'] }), withFrames('top', 'below'), false],
  ['a stack frame with vars', spec({ stack: [{ prompt: 'x {{messages}}', vars: { k: 'v' } }] }), undefined, true],
];

for (const [name, s, status, expected] of table)
  test(`readsMailbox: ${name} → ${expected}`, () => assert.equal(readsMailbox(s, status), expected));
