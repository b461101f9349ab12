// The `yaml` package, loaded on first use: ~70 modules that only error reports (spec files that do not
// parse) and `get -o yaml` need, so every `episodic run` and `get` does not pay for them at start-up.
// A runtime require, which bundling leaves alone: the package loads from node_modules as it is.
import { createRequire } from 'node:module';

export function yamlLib(): typeof import('yaml') {
  return createRequire(import.meta.url)('yaml') as typeof import('yaml');
}
