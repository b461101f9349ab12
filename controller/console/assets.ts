// The page and its assets. The HTML and CSS are constants; app.js and uplot.js are esbuild bundles of web/app.ts
// and web/uplot-entry.ts: dist/console/ in a built package, built in memory when running from the sources.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { CONSOLE_SCRIPTS, WEB_BUILD } from '../../scripts/build-stamp.mjs';
import { FIRST_PAGE_PATH } from './fleet-order.ts';

// The first page of the fleet is asked for by the HTML (preload), not after the script is parsed and run;
// uPlot's script and stylesheet are not asked for until a chart is drawn (web/charts.ts).
export const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>episodic console</title>
<link rel="icon" type="image/svg+xml" href="/assets/favicon.svg">
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/app.js" defer></script>
<link rel="preload" href="${FIRST_PAGE_PATH}" as="fetch" crossorigin>
</head>
<body>
<header><a href="#/" class="brand">episodic</a><nav><a href="#/">Fleet</a> <a href="#/triggers">Triggers</a> <a href="#/budgets">Budgets</a></nav><span id="live" class="live">connecting…</span></header>
<main id="main"></main>
</body>
</html>
`;

/** The tab's icon: an "e" on the header's colour (served from /assets, as the CSP asks). */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1d232a"/><text x="16" y="23" font-family="sans-serif" font-size="20" font-weight="700" fill="#64b5f6" text-anchor="middle">e</text></svg>
`;

export const APP_CSS = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
header { display: flex; gap: 1.5em; align-items: center; padding: .6em 1em; background: #1d232a; color: #fff; }
header a { color: #fff; text-decoration: none; margin-right: 1em; }
.brand { font-weight: 700; }
.live { margin-left: auto; font-size: 12px; opacity: .8; }
main { padding: 1em; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .3em .6em; border-bottom: 1px solid #e3e6ea; white-space: nowrap; }
td.msg { white-space: normal; max-width: 32em; overflow-wrap: anywhere; }
.chips span { display: inline-block; margin: 0 .5em .5em 0; padding: .15em .6em; border-radius: 1em; background: #e3e6ea; }
.filters { margin: .5em 0; display: flex; gap: .6em; flex-wrap: wrap; }
.phase-NeedsReview, .phase-Failed { color: #b3261e; font-weight: 600; }
.phase-Running { color: #0b57d0; }
.phase-Succeeded { color: #146c2e; }
.breaker-HalfOpen, .breaker-Open { color: #b06000; font-weight: 600; }
.timeline { display: flex; gap: 3px; align-items: flex-end; margin: .6em 0; flex-wrap: wrap; }
.mark { height: 28px; min-width: 10px; border-radius: 3px; cursor: pointer; border: 2px solid transparent; }
.mark.selected { border-color: #1d232a; }
.o-succeeded { background: #2e7d32; } .o-continue { background: #64b5f6; } .o-failed, .o-fatal { background: #d32f2f; }
.o-gateFailed { background: repeating-linear-gradient(135deg, #ad1457, #ad1457 4px, #f06292 4px, #f06292 8px); }
.o-retry { background: #f9a825; } .o-usageLimit { background: #6a1b9a; } .o-cancel { background: #757575; } .o-skipped { background: #cfd8dc; }
.step-boundary { align-self: stretch; border-left: 2px dashed #1d232a; padding: 0 .3em; font-size: 11px; color: #1d232a; max-width: 10em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.legend { display: flex; flex-wrap: wrap; gap: .8em; font-size: 12px; margin-bottom: .4em; }
.legend .swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: .3em; vertical-align: middle; }
.o-running { background: repeating-linear-gradient(45deg, #0b57d0, #0b57d0 4px, #64b5f6 4px, #64b5f6 8px); }
pre.log { background: #111; color: #eee; padding: .8em; max-height: 32em; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
section { background: #fff; padding: .6em 1em; margin-bottom: 1em; border-radius: 4px; }
button { cursor: pointer; }
svg.cost { background: #fff; }
.error { color: #b3261e; }
tr.current td { background: #eef3fd; }
pre.tail { margin: 0; max-height: 12em; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; }
button.expand { font-size: 11px; }
.scroll { overflow-x: auto; max-width: 100%; }
th.sortable { cursor: pointer; user-select: none; }
td.labels { white-space: normal; min-width: 12em; max-width: 22em; }
td.labels .label, td.labels .more { display: inline-block; max-width: 20em; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; vertical-align: bottom; margin-right: .3em; padding: 0 .4em; border-radius: .6em; background: #eef0f3; font-size: 12px; }
button.fold { border: none; background: none; padding: 0 .2em; font-size: 12px; }
tr.group td { background: #eef0f3; font-weight: 600; }
ul.tree { margin: .3em 0; padding-left: 1.4em; }
ul.tree li { overflow-wrap: anywhere; }
section.trigger.selected { outline: 2px solid #0b57d0; }
table.facts { width: auto; max-width: 100%; }
table.facts th { width: 12em; }
.chart { margin: .6em 0; max-width: 100%; overflow: hidden; }
.chart h4 { margin: .2em 0; font-size: 13px; }
.chart p.axes { margin: 0; font-size: 11px; color: #5f6368; }
td.whole .value > span:first-child { display: block; }
ul.files { margin: 0; padding-left: 1.2em; max-height: 14em; overflow: auto; }
ul.files li, ul.files code { overflow-wrap: anywhere; }
`;

const here = fileURLToPath(import.meta.url);

/** uPlot's stylesheet, from its package (a dependency): served as /assets/uplot.css, never from a CDN. */
export function uplotCss(): string {
  return readFileSync(createRequire(import.meta.url).resolve('uplot/dist/uPlot.min.css'), 'utf8');
}

/** The page's script (web/app.ts), prebuilt beside the CLI bundle or built at start. */
export function appScript(): Promise<string> {
  return webScript('app');
}

/** uPlot (web/uplot-entry.ts), its own script: loaded by the page only when it draws a chart. */
export function uplotScript(): Promise<string> {
  return webScript('uplot');
}

/** dist/console/NAME.js in a built package; from the sources (a checkout, tests) built in memory by esbuild. */
async function webScript(name: 'app' | 'uplot'): Promise<string> {
  const built = fileURLToPath(new URL(`../console/${name}.js`, import.meta.url));
  if (!here.endsWith('.ts') && existsSync(built)) return readFileSync(built, 'utf8');
  const { build } = await import('esbuild');
  const entry = CONSOLE_SCRIPTS.find(([, file]) => file === `${name}.js`)?.[0] as string;
  const out = await build({
    ...WEB_BUILD,
    entryPoints: [fileURLToPath(new URL(`./web/${entry}`, import.meta.url))],
    write: false,
  });
  return out.outputFiles[0]?.text ?? '';
}
