#!/usr/bin/env node
// The test gate: the project's test of slugify.
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const { slugify } = await import(pathToFileURL(resolve('src/slug.mjs')).href);
for (const [title, slug] of [
  ['Hello World', 'hello-world'],
  ['  Pipelines  Work ', 'pipelines-work'],
]) {
  assert.equal(slugify(title), slug, `slugify(${JSON.stringify(title)})`);
}
console.log('slugify: 2 cases pass');
