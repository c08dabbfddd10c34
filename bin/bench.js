#!/usr/bin/env node
// Runs bench/*.bench.ts in turn (through tsx); each prints its own side-by-side ratios and writes
// bench/results/<name>.json. Arguments pick benches by name: `node bin/bench.js startup dispatch`.
import { register } from 'tsx/esm/api';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

register();
const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench');
const wanted = process.argv.slice(2).flatMap((a) => a.split(/[\s,]+/)).filter(Boolean);
const all = readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).sort();
const unknown = wanted.filter((w) => !all.includes(`${w}.bench.ts`));
if (unknown.length > 0) {
  console.error(`bench: no bench/${unknown[0]}.bench.ts (have: ${all.map((f) => f.replace('.bench.ts', '')).join(', ')})`);
  process.exit(2);
}
const files = wanted.length === 0 ? all : all.filter((f) => wanted.includes(f.replace('.bench.ts', '')));
if (files.length === 0) console.log('no benchmarks yet');
for (const f of files) {
  console.log(`\n== ${f}`);
  await import(pathToFileURL(join(dir, f)).href);
}
