// Layout checks for console screenshots: nothing overlaps, nothing is cut. Text-bearing boxes in main must not
// intersect one another (an ancestor and its descendant aside), and each lies within the page's width unless a
// scrolling container (overflow-x auto) holds it.
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';

const SELECTOR =
  'main h2, main h3, main h4, main p, main li, main th, main td, main button, main select, main input, main a, main code, main span, main svg';

export async function assertLayoutClean(page: Page, what: string): Promise<void> {
  const problems = await page.evaluate((selector) => {
    const out: string[] = [];
    const width = document.documentElement.clientWidth;
    const els = Array.from(document.querySelectorAll<HTMLElement>(selector)).filter((e) => {
      const r = e.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
    });
    const scrolled = (e: Element) => {
      for (let p = e.parentElement; p; p = p.parentElement) if (getComputedStyle(p).overflowX === 'auto') return true;
      return false;
    };
    const name = (e: Element) => `${e.tagName.toLowerCase()}"${(e.textContent ?? '').slice(0, 30)}"`;
    for (const e of els) {
      const r = e.getBoundingClientRect();
      if (r.right > width + 1 && !scrolled(e)) out.push(`cut: ${name(e)} ends at ${Math.round(r.right)} > ${width}`);
    }
    // Leaves only: siblings in flow (cells, items, words) must not cover one another.
    const leaves = els.filter((e) => !els.some((o) => o !== e && e.contains(o)));
    for (let i = 0; i < leaves.length && out.length < 10; i++)
      for (let j = i + 1; j < leaves.length; j++) {
        const a = leaves[i]?.getBoundingClientRect();
        const b = leaves[j]?.getBoundingClientRect();
        if (!a || !b) continue;
        const overlap = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const vertical = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (overlap > 2 && vertical > 2)
          out.push(`overlap: ${name(leaves[i] as Element)} and ${name(leaves[j] as Element)}`);
      }
    return out;
  }, SELECTOR);
  assert.deepEqual(problems, [], `${what}: layout`);
}
