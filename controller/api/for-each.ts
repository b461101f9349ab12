// Fan-out steps (issue 32 §1): a step with forEach runs no agent of its own; each item becomes a child task
// (TASK-STEP-INDEX) through the created-tasks mechanism, with {{item}}, {{item.KEY}} and {{item.index}} in its
// prompt. Items are untrusted text (a planner's output): bounded here, only ever rendered into a prompt.
import { z } from 'zod';
import { clip } from './bounds.ts';

/** Items of one fan-out step. */
export const FOR_EACH_ITEMS_MAX = 256;
/** Characters of one item's text (or one field of an object item) in a child's prompt. */
export const FOR_EACH_ITEM_TEXT_MAX = 2000;
/** Bytes of {{steps.NAME.items}}: one entry per item with phase and outputs, items past it counted. */
export const FOR_EACH_ITEMS_SUMMARY_MAX = 8 * 1024;

const FROM_OUTPUT = /^steps\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.outputs\.([A-Za-z_][A-Za-z0-9_]*)$/;
const POLICY_WORDS = 'failurePolicy is all, any or {atLeast: N}';

export const ItemSchema = z.union([z.string().max(FOR_EACH_ITEM_TEXT_MAX), z.record(z.string(), z.unknown())]);

export const ForEachSchema = z
  .strictObject({
    items: z.array(ItemSchema).min(1).max(FOR_EACH_ITEMS_MAX).optional().describe('strings or objects'),
    fromOutput: z
      .string()
      .regex(FROM_OUTPUT, 'must be steps.NAME.outputs.KEY')
      .optional()
      .describe('steps.NAME.outputs.KEY of an earlier step: a JSON array, read when this step starts'),
    maxConcurrency: z.number().int().min(1).max(FOR_EACH_ITEMS_MAX).default(4).describe('children running at once'),
    failurePolicy: z
      .union([z.enum(['all', 'any']), z.strictObject({ atLeast: z.number().int().min(1).max(FOR_EACH_ITEMS_MAX) })])
      .default('all')
      .describe('all: every child must succeed; any: one; {atLeast: N}: N of them'),
  })
  .superRefine((f, ctx) => {
    if ((f.items === undefined) === (f.fromOutput === undefined))
      ctx.addIssue({ code: 'custom', path: ['items'], message: 'exactly one of items or fromOutput is required' });
  })
  // No CEL rule: the apiserver's CEL sees no field `items` here (its elements preserve unknown fields).
  .describe('a fan-out step: one child task per item (TASK-STEP-INDEX), the step waits for them');

export type ForEach = z.infer<typeof ForEachSchema>;
export type FailurePolicy = ForEach['failurePolicy'];
export type Item = z.infer<typeof ItemSchema>;
export { POLICY_WORDS };

/** The step and output key fromOutput names. */
export function fromOutputRef(ref: string): { step: string; key: string } | undefined {
  const m = FROM_OUTPUT.exec(ref);
  return m ? { step: m[1], key: m[3] } : undefined;
}

/** A fromOutput value as items: a JSON array of at most FOR_EACH_ITEMS_MAX strings or objects, or why not. */
export function parseItems(value: string | undefined, ref: string): Item[] | string {
  if (value === undefined) return `forEach.fromOutput ${ref}: the step published no such output`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return `forEach.fromOutput ${ref}: not JSON (${JSON.stringify(clip(value, 60))})`;
  }
  const items = ItemSchema.array().min(1).max(FOR_EACH_ITEMS_MAX).safeParse(parsed);
  if (!items.success)
    return `forEach.fromOutput ${ref}: not a JSON array of 1 to ${FOR_EACH_ITEMS_MAX} strings or objects`;
  return items.data;
}

/** An item's placeholders for a child's prompt: {{item}}, {{item.index}} and {{item.KEY}} of an object item. */
export function itemValues(item: Item, index: number): Record<string, string> {
  const text = (v: unknown) => clip(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''), FOR_EACH_ITEM_TEXT_MAX);
  const values: Record<string, string> = { item: text(item), 'item.index': String(index) };
  if (typeof item === 'object')
    for (const [key, v] of Object.entries(item))
      if (/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(key)) values[`item.${key}`] = text(v);
  return values;
}

const ITEM_PLACEHOLDER = /\{\{\s*(item(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\s*\}\}/g;

/**
 * A child's prompt: the step's template with the item's placeholders filled in one pass. The item's text may
 * not bring placeholders of its own into the child's prompt ("{{" becomes "{ {"), so it is only ever data.
 */
export function renderItemPrompt(template: string, item: Item, index: number): string {
  const values = itemValues(item, index);
  return template.replace(ITEM_PLACEHOLDER, (whole, key: string) =>
    Object.hasOwn(values, key) ? values[key].replaceAll('{{', '{ {') : key.startsWith('item.') ? '' : whole,
  );
}
