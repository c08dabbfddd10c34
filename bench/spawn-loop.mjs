// Bench comparator (plain Node, run as its own process): the bare spawn loop any Node runner pays —
// N spawns of `true`, P at a time, each in its own process group with piped output drained.
// Usage: node bench/spawn-loop.mjs N P
import { spawn } from 'node:child_process';

const n = Number(process.argv[2] ?? 500);
const p = Number(process.argv[3] ?? 8);
let started = 0;
const one = () => {
  started++;
  const c = spawn('true', [String(started % p)], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  c.stdout.resume();
  c.stderr.resume();
  c.on('close', () => {
    if (started < n) one();
  });
};
for (let i = 0; i < Math.min(p, n); i++) one();
