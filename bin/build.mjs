#!/usr/bin/env node
// Builds the CLI (`make build`, `npm run build`): bundles src/cli/main.ts with esbuild into dist/,
// one chunk per subcommand (each loaded only when run), and the TypeScript client for engines
// (src/client/index.ts → dist/client.js, the package's `berth/client` export; its type declarations
// are `tsc -p tsconfig.client.json`, in `npm run build` and `make build`). package.json's
// `dependencies` (what an installed package gets, `npm install -g berth-*.tgz`) stay in node_modules;
// everything else the sources import (the small pure-JS devDependencies commander, yaml, zod) is
// inlined, so start-up reads a few files instead of hundreds. Type checking is `tsc --noEmit` (make
// lint), not this step.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const runtime = Object.keys(pkg.dependencies);
const external = runtime.flatMap((d) => [d, `${d}/*`]);
const out = join(root, 'dist');

mkdirSync(out, { recursive: true });
const result = await build({
  metafile: true,
  entryPoints: { main: join(root, 'src', 'cli', 'main.ts'), client: join(root, 'src', 'client', 'index.ts') },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outdir: out,
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: true,
  external,
  logLevel: 'warning',
  // CommonJS code inlined into an ES module needs a require of its own.
  banner: {
    js:
      "import { createRequire as __berthRequire } from 'node:module'; " +
      'const require = __berthRequire(import.meta.url);',
  },
});
// Chunks of earlier builds go (not the whole of dist/ first: a CLI already running keeps its files).
const fresh = new Set(Object.keys(result.metafile.outputs).flatMap((f) => [resolve(f), resolve(`${f}.map`)]));
for (const f of readdirSync(join(out, 'chunks'))) {
  const path = join(out, 'chunks', f);
  if ((f.endsWith('.js') || f.endsWith('.js.map')) && !fresh.has(path)) rmSync(path);
}
// The Python harness is found next to the executor code that runs it (import.meta.url of the chunk).
copyFileSync(join(root, 'src', 'workers', 'executors', 'harness.py'), join(out, 'chunks', 'harness.py'));
copyFileSync(join(root, 'src', 'workers', 'executors', 'harness.py'), join(out, 'harness.py'));
// The lease renewer's thread (src/ha/renewer-thread.mjs, plain JavaScript) is found the same way.
for (const dir of [join(out, 'chunks'), out]) {
  copyFileSync(join(root, 'src', 'ha', 'renewer-thread.mjs'), join(dir, 'renewer-thread.mjs'));
}
writeFileSync(join(out, '.berth-build'), `${new Date().toISOString()}\n`);
