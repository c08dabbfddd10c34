/**
 * Bench support: timing of real processes, medians of paired runs, and the JSON record each bench
 * writes under bench/results/<name>.json (figures as measured, with the machine they came from).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BERTH_BIN } from '../src/berth-bin.js';
import type { NormalizedAsk } from '../src/placement/types.js';

/** Repository root. */
/** An in-process ask: 1 core, no GPU, no label, overridden by `a` (the placer benches). */
export const benchAsk = (a: Partial<NormalizedAsk> = {}): NormalizedAsk => ({
  cpus: 1,
  gpus: 0,
  label: '',
  policy: 'prefer',
  node: 'n',
  runId: 'r',
  env: {},
  ...a,
});

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Median of `xs` (ms or any unit). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Wall time in ms of `cmd args` run to completion (stdout ignored); rejects on a non-zero exit. */
export function timed(cmd: string, args: string[], opts: { input?: string; cwd?: string } = {}): Promise<number> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const stdin = opts.input === undefined ? 'ignore' : 'pipe';
    const child = spawn(cmd, args, { stdio: [stdin, 'ignore', 'pipe'], cwd: opts.cwd ?? ROOT });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    if (opts.input !== undefined) child.stdin!.end(opts.input);
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Number(process.hrtime.bigint() - t0) / 1e6);
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${err.slice(-2000)}`));
    });
  });
}

/** One row of a bench: a name, a measured value with its unit, and the ratio against the bench's base. */
export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  ratio?: number;
  target?: string;
  met?: boolean;
}

/** Prints `rows` as an aligned table and writes them as JSON to bench/results/<name>.json. */
export function report(name: string, title: string, rows: BenchRow[]): void {
  console.log(title);
  const width = Math.max(58, ...rows.map((r) => r.name.length)); // columns line up however long a name is
  for (const r of rows) {
    const ratio = r.ratio === undefined ? '' : `  ${r.ratio.toFixed(2).padStart(6)}×`;
    const target = r.target === undefined ? '' : `  target ${r.target}: ${r.met ? 'met' : 'NOT met'}`;
    const value = r.value >= 100 ? r.value.toFixed(0) : r.value.toFixed(2);
    console.log(`  ${r.name.padEnd(width)} ${value.padStart(9)} ${r.unit.padEnd(8)}${ratio}${target}`);
  }
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const record = {
    bench: name,
    title,
    at: new Date().toISOString(),
    cores: os.availableParallelism(),
    node: process.version,
    rows,
  };
  writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(record, null, 2)}\n`);
}

/** A fresh temporary state directory for a bench server (its journal; never ~/.local/state). */
export function benchStateDir(): string {
  return mkdtempSync(join(os.tmpdir(), 'berth-bench-'));
}

/** A real `berth serve` (and optionally a `berth worker`) started from bin/berth.js for a bench. */
export interface BenchServer {
  address: string;
  stop(): Promise<void>;
}

function waitLine(child: import('node:child_process').ChildProcess, re: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const on = (d: Buffer) => {
      buf += d.toString();
      const m = buf.split('\n').find((l) => re.test(l));
      if (m !== undefined) {
        child.stderr!.off('data', on);
        child.stdout!.off('data', on);
        child.stderr!.resume();
        child.stdout!.resume();
        resolve(m);
      }
    };
    child.stderr!.on('data', on);
    child.stdout!.on('data', on);
    child.once('exit', (code) => reject(new Error(`exited ${code} before ${re}: ${buf.slice(-2000)}`)));
  });
}

function ended(child: import('node:child_process').ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Starts `berth serve --cpus <cpus>` on loopback and, with `worker`, a `berth worker` named
 * `remote` carrying label `remote` with `worker.cpus` cores; resolves once it is attached. `bin`: the
 * `berth` entry point to run (default this checkout's; another build for a side-by-side figure).
 */
export async function startBerth(
  cpus: number,
  worker?: { cpus: number },
  bin: string = BERTH_BIN,
): Promise<BenchServer> {
  const env = { ...process.env, BERTH_LOG_LEVEL: 'info' };
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") go to the server and worker processes, for profiling
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const stateDir = benchStateDir();
  const server = spawn(
    process.execPath,
    [
      ...nodeArgs,
      bin,
      'serve',
      '--listen',
      '127.0.0.1:0',
      '--cpus',
      String(cpus),
      '--gpus',
      '',
      '--state-dir',
      stateDir,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const line = await waitLine(server, /berth serving/);
  const address = (JSON.parse(line) as { address: string }).address;
  let agent: import('node:child_process').ChildProcess | undefined;
  if (worker !== undefined) {
    agent = spawn(
      process.execPath,
      [
        ...nodeArgs,
        bin,
        'worker',
        '--server',
        address,
        '--name',
        'remote',
        '--labels',
        'remote',
        '--cpus',
        String(worker.cpus),
        '--gpus',
        '',
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    await waitLine(agent, /attached|welcome/i);
  }
  return {
    address,
    async stop() {
      for (const c of [agent, server]) {
        if (c === undefined) continue;
        c.kill('SIGTERM');
        const t = setTimeout(() => c.kill('SIGKILL'), 5000);
        await ended(c);
        clearTimeout(t);
      }
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
