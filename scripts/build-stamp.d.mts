// Types of scripts/build-stamp.mjs (plain JS: the build runs before anything is compiled).
export declare const BUILT: string[];
export declare function sourceHash(repo: string): string;
export declare function readStamp(dist: string): { sources: string; files: string[] } | undefined;
export declare function distIsFresh(repo: string, sources?: string): boolean;
export declare const CONSOLE_SCRIPTS: ReadonlyArray<readonly [entry: string, name: string]>;
export declare const WEB_BUILD: {
  readonly bundle: true;
  readonly format: 'iife';
  readonly platform: 'browser';
  readonly target: 'es2022';
  readonly minify: true;
  readonly logLevel: 'warning';
};
