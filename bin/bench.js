#!/usr/bin/env node
// Runs bench/*.bench.ts in turn (through tsx); each prints its own side-by-side ratios.
// `node bin/bench.js placement dispatch` runs only the benches whose file name contains one of the words.
import { register } from 'tsx/esm/api';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

register();
const only = process.argv.slice(2);
const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((w) => f.includes(w)))
  .sort();
if (files.length === 0) console.log(only.length ? `no benchmark matches ${only.join(', ')}` : 'no benchmarks yet');
for (const f of files) {
  console.log(`\n== ${f}`);
  await import(pathToFileURL(join(dir, f)).href);
}
