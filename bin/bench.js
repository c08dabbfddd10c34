#!/usr/bin/env node
// Runs bench/*.bench.ts in turn (through tsx); each prints its own side-by-side ratios and writes
// bench/results/<name>.json. `node bin/bench.js placement dispatch` runs only the benches whose file
// name contains one of the words (a word matching none is an error).
import { register } from 'tsx/esm/api';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

register();
const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench');
// --flags are the benches' own (e.g. survival --quick, takeover --trials 20): a number after one is its value
const wanted = process.argv
  .slice(2)
  .flatMap((a) => a.split(/[\s,]+/))
  .filter((a, i, all) => a && !a.startsWith('--') && !(/^\d+$/.test(a) && all[i - 1]?.startsWith('--')));
const all = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .sort();
const unknown = wanted.filter((w) => !all.some((f) => f.includes(w)));
if (unknown.length > 0) {
  console.error(
    `bench: no bench/*.bench.ts matches ${unknown[0]} (have: ${all.map((f) => f.replace('.bench.ts', '')).join(', ')})`,
  );
  process.exit(2);
}
const files = wanted.length === 0 ? all : all.filter((f) => wanted.some((w) => f.includes(w)));
if (files.length === 0) console.log('no benchmarks yet');
const startedAt = new Date().toISOString();
for (const f of files) {
  console.log(`\n== ${f}`);
  await import(pathToFileURL(join(dir, f)).href);
}

// Every target of this run side by side: the rows of each bench that wrote bench/results/<name>.json now.
const results = join(dir, 'results');
const records = files
  .map((f) => join(results, `${f.replace('.bench.ts', '')}.json`))
  .filter((p) => existsSync(p))
  .map((p) => JSON.parse(readFileSync(p, 'utf8')))
  .filter((r) => r.at >= startedAt);
const targets = records.flatMap((r) =>
  r.rows.filter((row) => row.target !== undefined).map((row) => ({ bench: r.bench, ...row })),
);
if (targets.length > 0) {
  console.log('\n== targets of this run');
  for (const t of targets) {
    console.log(
      `  ${`${t.bench}: ${t.name}`.padEnd(70)} ${t.ratio.toFixed(2).padStart(6)}×  target ${t.target}: ` +
        `${t.met ? 'met' : 'NOT met'}`,
    );
  }
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'summary.json'), `${JSON.stringify({ at: startedAt, targets }, null, 2)}\n`);
  console.log(`(JSON: bench/results/*.json, this table: bench/results/summary.json)`);
}
