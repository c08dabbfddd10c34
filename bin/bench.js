#!/usr/bin/env node
// Runs every bench/*.bench.ts in turn (through tsx); each prints its own side-by-side ratios.
import { register } from 'tsx/esm/api';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

register();
const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench');
const files = readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).sort();
if (files.length === 0) console.log('no benchmarks yet');
for (const f of files) {
  console.log(`\n== ${f}`);
  await import(pathToFileURL(join(dir, f)).href);
}
