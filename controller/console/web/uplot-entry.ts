// uPlot as its own script, /assets/uplot.js (dist/console/uplot.js): charts.ts loads it when a chart is first
// drawn, so the fleet's first render never waits for the browser to fetch and parse it.
import uPlot from 'uplot';

(globalThis as { uPlot?: typeof uPlot }).uPlot = uPlot;
