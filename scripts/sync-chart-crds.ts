// Copies the generated CRDs (crds/, from `node scripts/gen-crds.ts`) into the Helm chart's crds/ directory:
//   node scripts/sync-chart-crds.ts
// crds/ stays the one source; test/install/chart.test.ts fails when the chart's copy is stale.
// Run scripts/gen-manifests.ts afterwards: manifests/ carries a copy too.
import { copyFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SOURCE_CRDS = path.join(repoRoot, 'crds');
export const CHART_CRDS = path.join(repoRoot, 'charts', 'episodic', 'crds');

export async function crdFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort();
}

export async function syncChartCrds(): Promise<string[]> {
  const wanted = await crdFiles(SOURCE_CRDS);
  for (const stale of (await crdFiles(CHART_CRDS)).filter((f) => !wanted.includes(f))) {
    await rm(path.join(CHART_CRDS, stale));
  }
  for (const file of wanted) await copyFile(path.join(SOURCE_CRDS, file), path.join(CHART_CRDS, file));
  return wanted;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const files = await syncChartCrds();
  console.log(`copied ${files.join(', ')} to ${path.relative(process.cwd(), CHART_CRDS) || CHART_CRDS}`);
}
