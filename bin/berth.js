#!/usr/bin/env node
// Entry point of the `berth` CLI: runs the compiled JavaScript in dist/ (`make build`), never tsx.
import { existsSync } from 'node:fs';

const main = new URL('../dist/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('berth: not built yet: run `make build` (or `npm run build`) in the berth checkout\n');
  process.exit(1);
}
await import(main.href);
