// A static JSON import: the bundler inlines it (dist/ has no package.json beside it), Node reads it from source.
import pkg from '../package.json' with { type: 'json' };

export const VERSION_STRING: string = pkg.version;
