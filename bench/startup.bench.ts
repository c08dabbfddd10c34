/**
 * Start-up (issue 11 item 3): `berth --help` and `berth dispatch` of one `true` job against a bare
 * `node -e 0`, wall time, median of paired runs (each round runs all three back to back).
 * Targets: help ≤ 2×, dispatch of one job ≤ 3× `node -e 0`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { BERTH_BIN as bin } from '../src/berth-bin.js';
import { median, report, timed } from './support.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const dir = mkdtempSync(join(os.tmpdir(), 'berth-bench-startup-'));
try {
  const batch = join(dir, 'one.yaml');
  writeFileSync(batch, 'jobs:\n  - argv: ["true"]\n');
  const bare: number[] = [];
  const help: number[] = [];
  const one: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    bare.push(await timed(process.execPath, ['-e', '0']));
    help.push(await timed(process.execPath, [bin, '--help']));
    one.push(
      await timed(process.execPath, [bin, 'dispatch', batch, '--devices', '0', '--log-dir', join(dir, `logs${i}`)]),
    );
  }
  const b = median(bare);
  const h = median(help);
  const d = median(one);
  report('startup', `start-up, median of ${ROUNDS} paired runs (${os.availableParallelism()} cores)`, [
    { name: 'node -e 0', value: b, unit: 'ms', ratio: 1 },
    { name: 'berth --help', value: h, unit: 'ms', ratio: h / b, target: '≤ 2×', met: h / b <= 2 },
    { name: 'berth dispatch (one `true` job)', value: d, unit: 'ms', ratio: d / b, target: '≤ 3×', met: d / b <= 3 },
  ]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
