/**
 * Dispatch (SPEC D3, issue 11 item 4), every figure a separate process started from scratch:
 * - 500 jobs of `true` on 8 devices through `berth dispatch --devices 0-7 -j 8` against a bare Node
 *   spawn loop (bench/spawn-loop.mjs, 8 at a time; target ≤ 1.3×) and `xargs -P 8`;
 * - the mixed batch (one 6 s job, then 50 `true` on 2 devices): time from launch until the last
 *   quick job's end is reported, berth against a seed-style 0.1 s polling scheduler
 *   (bench/polling-dispatch.mjs; target ≥ 10× sooner). Every figure is the median of BENCH_ROUNDS runs (default 3).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { BERTH_BIN } from '../src/berth-bin.js';
import { median, report, ROOT, timed } from './support.js';

const JOBS = 500;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** Ms from launch until a stdout line matches `last` (the process is then left to finish). */
function untilLine(cmd: string, args: string[], last: RegExp): Promise<number> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd: ROOT });
    let buf = '';
    let seen: number | undefined;
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      if (seen === undefined && buf.split('\n').some((l) => last.test(l)))
        seen = Number(process.hrtime.bigint() - t0) / 1e6;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      seen !== undefined && code === 0
        ? resolve(seen)
        : reject(new Error(`${cmd} exited ${code} (${last} seen: ${seen !== undefined})`)),
    );
  });
}

const dir = mkdtempSync(join(os.tmpdir(), 'berth-bench-dispatch-'));
try {
  const many = join(dir, 'many.json');
  writeFileSync(
    many,
    JSON.stringify(
      Array.from({ length: JOBS }, (_, i) => ({ label: `t${i}`, devices: 1, argv: ['true', '{devices}'] })),
    ),
  );
  const lines = Array.from({ length: JOBS }, (_, i) => String(i % 8)).join('\n') + '\n';
  const mixed = join(dir, 'mixed.json');
  const quick = Array.from({ length: 50 }, (_, i) => ({ label: `q${i + 1}`, devices: 1, argv: ['true'] }));
  writeFileSync(mixed, JSON.stringify([{ label: 'slow', devices: 1, argv: ['sleep', '6'] }, ...quick]));

  const xargs: number[] = [];
  const loop: number[] = [];
  const cli: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    xargs.push(await timed('xargs', ['-P', '8', '-n', '1', 'true'], { input: lines }));
    loop.push(await timed(process.execPath, [join(ROOT, 'bench', 'spawn-loop.mjs'), String(JOBS), '8']));
    cli.push(
      await timed(process.execPath, [
        BERTH_BIN,
        'dispatch',
        many,
        '--devices',
        '0-7',
        '-j',
        '8',
        '--log-dir',
        join(dir, `logs${i}`),
      ]),
    );
  }
  // The mixed batch, ROUNDS times each, back to back (each run lasts the 6 s job; the medians are compared).
  const polls: number[] = [];
  const berths: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    polls.push(
      await untilLine(process.execPath, [join(ROOT, 'bench', 'polling-dispatch.mjs'), mixed, '2'], /^DONE q50$/),
    );
    berths.push(
      await untilLine(
        process.execPath,
        [BERTH_BIN, 'dispatch', mixed, '--devices', '0-1', '--log-dir', join(dir, `logs-mixed${i}`)],
        /^PASS\s+q50\s/,
      ),
    );
  }
  const [poll, berth] = [median(polls), median(berths)];
  const [x, l, c] = [median(xargs), median(loop), median(cli)];
  report(
    'dispatch',
    `dispatch: ${JOBS} \`true\` jobs on 8 devices, and the mixed batch on 2 devices (each a median of ${ROUNDS})`,
    [
      { name: 'bare Node spawn loop, 8 at a time (own process)', value: l, unit: 'ms', ratio: 1 },
      {
        name: 'berth dispatch --devices 0-7 -j 8',
        value: c,
        unit: 'ms',
        ratio: c / l,
        target: '≤ 1.3×',
        met: c / l <= 1.3,
      },
      { name: 'xargs -P 8 -n 1 true', value: x, unit: 'ms', ratio: x / l },
      { name: 'mixed: 0.1 s polling scheduler, last quick job done', value: poll, unit: 'ms', ratio: 1 },
      {
        name: 'mixed: berth dispatch, last quick job done',
        value: berth,
        unit: 'ms',
        ratio: berth / poll,
        target: '≤ 0.1× (10× sooner)',
        met: poll / berth >= 10,
      },
    ],
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
