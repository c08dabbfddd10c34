/**
 * Benchmark (issue #5, acceptance 13): 500 jobs of `true` on 8 devices through `berth dispatch`
 * (`--devices 0-7 -j 8`) against `xargs -P 8` running the same 500 commands, side by side in one
 * run. Prints both wall times and the ratio; also the in-process batch alone (no CLI start-up) and
 * bare Node spawns of the same commands, the floor any Node runner pays.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseBatch } from '../src/dispatch/batch.js';
import { runBatch } from '../src/dispatch/batch-run.js';
import type { Reporter } from '../src/dispatch/reporter.js';
import { LocalRunner } from '../src/dispatch/local-runner.js';
import { DevicePool } from '../src/resources/devices.js';

const JOBS = 500;
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

function timed(cmd: string, args: string[], input?: string): Promise<number> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'inherit'], cwd: ROOT });
    if (input !== undefined) child.stdin!.end(input);
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(`${cmd} exited ${code}`))));
  });
}

/** Node's own floor: 500 bare spawns of `true`, 8 at a time, with piped output. */
function bareSpawns(): Promise<number> {
  const t0 = process.hrtime.bigint();
  let started = 0;
  let ended = 0;
  return new Promise((resolve) => {
    const one = () => {
      started++;
      const c = spawn('true', ['0'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      c.stdout!.resume();
      c.stderr!.resume();
      c.on('close', () => {
        if (++ended === JOBS) resolve(Number(process.hrtime.bigint() - t0) / 1e6);
        else if (started < JOBS) one();
      });
    };
    for (let i = 0; i < 8; i++) one();
  });
}

const quiet: Reporter = { started() {}, finished() {}, stuck() {}, notice() {}, progress() {}, end() {} };

const dir = mkdtempSync(join(os.tmpdir(), 'berth-bench-dispatch-'));
try {
  const data = Array.from({ length: JOBS }, (_, i) => ({ label: `t${i}`, devices: 1, argv: ['true', '{devices}'] }));
  const file = join(dir, 'batch.json');
  writeFileSync(file, JSON.stringify(data));
  const lines = Array.from({ length: JOBS }, (_, i) => String(i % 8)).join('\n') + '\n';

  const xargsMs = await timed('xargs', ['-P', '8', '-n', '1', 'true'], lines);
  const cliMs = await timed(process.execPath, [join(ROOT, 'bin', 'berth.js'), 'dispatch', file, '--devices', '0-7', '-j', '8', '--log-dir', join(dir, 'logs-cli')]);
  const t0 = process.hrtime.bigint();
  const results = await runBatch(parseBatch(data), new LocalRunner('CUDA_VISIBLE_DEVICES'), {
    pool: new DevicePool([0, 1, 2, 3, 4, 5, 6, 7]), maxInFlight: 8, backfill: 0, failFast: false, graceMs: 1000, logDir: dir,
  }, quiet);
  const inProcMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const floorMs = await bareSpawns();
  if (!results.every((r) => r.status === 'passed')) throw new Error('a job of the in-process batch did not pass');

  const row = (name: string, ms: number) => console.log(`${name.padEnd(44)} ${(ms / 1000).toFixed(2).padStart(6)} s  ${(ms / xargsMs).toFixed(2).padStart(5)}× xargs`);
  console.log(`${JOBS} jobs of \`true\` on 8 devices, 8 at a time (${os.availableParallelism()} cores)`);
  row('xargs -P 8 -n 1 true', xargsMs);
  row('berth dispatch --devices 0-7 -j 8 (CLI)', cliMs);
  row('runBatch in-process (no CLI start-up)', inProcMs);
  row('bare Node spawn, 8 at a time (the floor)', floorMs);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
