// The `yaml` package, loaded on first use (spec files, `get -o yaml`): commands that read no YAML, like
// `episodic episode` in every pod, do not pay for it at start-up. A runtime require, which bundling leaves
// alone: the package loads from node_modules as it is.
import { createRequire } from 'node:module';

export function yamlLib(): typeof import('yaml') {
  return createRequire(import.meta.url)('yaml') as typeof import('yaml');
}
