// Regenerates the checked-in CRD manifests (crds/) from the zod schemas:
//   node scripts/gen-crds.ts
// test/crd/crd.test.ts fails when a file is stale. Then run scripts/sync-chart-crds.ts and
// scripts/gen-manifests.ts: the chart and manifests/ carry copies.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRDS } from '../controller/api/crd.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
for (const crd of CRDS) {
  const target = path.join(repoRoot, crd.file);
  await writeFile(target, crd.yaml());
  console.log(`wrote ${path.relative(process.cwd(), target) || target}`);
}
