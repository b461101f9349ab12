// Regenerates the checked-in CRD manifest from the zod schema:
//   node scripts/gen-crds.ts
// test/crd/crd.test.ts fails when the file is stale.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRD_FILE, agentTaskCrdYaml } from '../controller/api/crd.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const target = path.join(repoRoot, CRD_FILE);
await writeFile(target, agentTaskCrdYaml());
console.log(`wrote ${path.relative(process.cwd(), target) || target}`);
