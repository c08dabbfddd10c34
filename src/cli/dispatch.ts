/**
 * `berth dispatch FILE`: run a batch of device-hungry jobs in parallel up to the devices that
 * exist (SPEC D1–D8). Usage and validation errors (flags, batch, output paths, token, a job too big
 * for any machine) exit 2 before anything starts; an unreachable `--server` exits 1; otherwise the
 * exit code is 0 only when every job passed, 130/143 after Ctrl-C/SIGTERM, else 1.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { COMMANDS } from './commands.js';
import { jobsLimit, resolveDispatchOptions } from '../config/dispatch-options.js';
import { OptionsError } from '../config/options-error.js';
import { runBatch } from '../dispatch/batch-run.js';
import { BatchError, loadBatch } from '../dispatch/batch.js';
import { jobRef } from '../dispatch/batch-error.js';
import type { Job, Runner } from '../dispatch/job.js';
import { LocalRunner, SHARE_ENV } from '../dispatch/local-runner.js';
import { killAllGroups } from '../dispatch/process-groups.js';
import { checkReportFile, prepareLogDir } from '../dispatch/paths.js';
import { ConsoleReporter } from '../dispatch/reporter.js';
import { summaryText } from '../dispatch/summary.js';
import { ALLOCATION_ENV_KEYS } from '../placement/env.js';
import { DevicePool } from '../resources/devices.js';
import { detectInventory } from '../resources/inventory.js';
import { formatRange } from '../resources/ranges.js';

const EXAMPLE = `
Batch file (YAML or JSON; a bare list of jobs works too):
  jobs:
    - name: train-a
      devices: 2                      # device count, 0 for none, or a share (0.5)
      argv: [python, train.py, --gpus, "{devices}"]
      timeout: 600                    # seconds, optional
    - name: smoke
      devices: 1
      require: a100                   # with --server: only machines labelled a100 (prefer: rather them)
      shell: "echo on $CUDA_VISIBLE_DEVICES && ./smoke.sh"
      env: { SEED: 1 }
      cwd: tests
      stack_dump_signal: true         # SIGUSR1 before a timeout stop
    - name: eval
      devices: 0.5                    # a share of one device: two such jobs share it (no isolation)
      resources: { trainer: 1 }       # with --server: named resources of berth's machines and pools
      argv: [python, eval.py]

name (default job<N>) and devices (default 0) are optional; cwd is relative to the batch file's
directory. {devices} in argv/shell is the range string (0-3); the device variable gets the ids as
a comma list (0,1,2,3), as CUDA and ASCEND_RT_VISIBLE_DEVICES expect. Processes that leave their
process group (setsid, daemons) are not tracked.

Examples:
  berth dispatch jobs.yaml                         # every GPU of this host, one job per device
  berth dispatch jobs.yaml --devices 0-3 -j 2 --fail-fast --junit report.xml
  berth dispatch jobs.yaml --device-env ASCEND_RT_VISIBLE_DEVICES --backfill --max-overtakes 4
  berth dispatch jobs.yaml --server 127.0.0.1:50051   # through berth and its workers

Exit code: 0 when every job passed; 1 when one did not, or --server cannot be reached; 2 for bad
usage, an invalid batch, an unwritable --junit/--log-dir, a rejected token or a job too big
for any machine (nothing started); 130 / 143 after SIGINT / SIGTERM.`;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Most jobs a refusal lists one by one; the rest are counted. */
const LISTED = 5;

/**
 * D2: refuses a batch with a job needing more devices than `most` (the pool, or the biggest machine
 * in `--server` mode, described by `where`): `where` (and any hint in it) is said once, then the
 * jobs, at most LISTED of them one by one.
 * @throws BatchError (CLI exit 2).
 */
export function checkFits(jobs: readonly Job[], most: number, where: string): void {
  const tooBig = jobs.filter((j) => j.devices > most);
  if (tooBig.length === 0) return;
  const lines = tooBig.slice(0, LISTED).map((j) => `  ${jobRef(j)} needs ${plural(j.devices, 'device')}`);
  if (tooBig.length > LISTED) lines.push(`  and ${tooBig.length - LISTED} more`);
  throw new BatchError(
    `${plural(tooBig.length, 'job')} ${tooBig.length === 1 ? 'needs' : 'need'} more devices than there are: ` +
      `${where}\n${lines.join('\n')}\nnothing was started`,
  );
}

/**
 * Machine labels (`require:`/`prefer:`) and named resources (`resources:`) are berth's: without `--server` a job
 * that requires a label or asks a named resource is refused (this host has neither, so it could never run as
 * asked); a preferred label is ignored, with one note to `warn` (a preference may always run elsewhere).
 * @throws BatchError naming the first such job (CLI exit 2).
 */
export function checkLocalLabels(jobs: readonly Job[], warn: (note: string) => void): void {
  const required = jobs.find((j) => j.machine?.policy === 'require');
  if (required !== undefined)
    throw new BatchError(
      `${jobRef(required)}: require: ${JSON.stringify(required.machine!.label)}: machine labels are berth's; ` +
        `run the batch with --server (this host has none)\nnothing was started`,
    );
  const named = jobs.find((j) => j.resources !== undefined);
  if (named !== undefined)
    throw new BatchError(
      `${jobRef(named)}: resources: ${Object.keys(named.resources!).join(', ')}: named resources are those of ` +
        `berth's machines and pools; run the batch with --server (this host has only its devices)\nnothing was started`,
    );
  const preferring = jobs.filter((j) => j.machine?.policy === 'prefer').length;
  if (preferring > 0)
    warn(`prefer: ignored without --server (${plural(preferring, 'job')}): the jobs run on this host`);
}

/**
 * How many jobs `devices` ids can run at once, for `-j auto`: one per id, or, when some job asks a share of one
 * device (`devices: 0.5`), as many of the smallest share as one id holds, per id.
 */
export function deviceSlots(jobs: readonly Job[], devices: number): number {
  let perId = 1;
  for (const j of jobs) if (j.devices > 0 && j.devices < 1) perId = Math.max(perId, Math.floor(1 / j.devices + 1e-9));
  return devices * perId;
}

function poolText(pool: DevicePool): string {
  return `the pool has ${pool.size === 0 ? 'no devices' : `${plural(pool.size, 'device')} (${formatRange(pool.all)})`}`;
}

/**
 * SPEC R8: the devices a job gets are set by dispatch (and, with --server, OMP_NUM_THREADS and
 * CUDA_VISIBLE_DEVICES by berth): a job env naming one of them refuses the batch, naming the job.
 * @throws BatchError (CLI exit 2).
 */
export function checkJobEnv(jobs: readonly Job[], deviceEnv: string, server: boolean): void {
  const reserved = new Set([deviceEnv, SHARE_ENV, ...(server ? ALLOCATION_ENV_KEYS : [])]);
  for (const j of jobs) {
    const key = Object.keys(j.env).find((k) => reserved.has(k));
    if (key !== undefined) {
      throw new BatchError(
        `${jobRef(j)}: env.${key}: ` +
          `set by dispatch from the devices the job gets (SPEC R8); ` +
          `a job cannot set it (got ${JSON.stringify(j.env[key])})\nnothing was started`,
      );
    }
  }
}

async function dispatch(file: string, flags: Record<string, unknown>): Promise<void> {
  const o = resolveDispatchOptions(flags);
  const warn = (note: string) => process.stderr.write(`berth dispatch: ${note}\n`);
  const jobs = await loadBatch(file, warn);
  checkJobEnv(jobs, o.deviceEnv, o.server !== undefined);
  let pool: DevicePool | null = null;
  let runner: Runner;
  let maxInFlight: number;
  const junit = o.junit !== undefined ? checkReportFile(o.junit) : undefined;
  if (o.server !== undefined) {
    if (o.devices !== undefined)
      throw new OptionsError('--devices: not used with --server, where berth picks the devices');
    maxInFlight = o.jobs === 'auto' ? jobs.length : o.jobs;
    // Loaded only here: without --server, dispatch never loads gRPC (issue 11: a small, fast process).
    const [{ authMetadata, channelCredentials, resolveClientOptions }, { RemoteRunner }, { largestMachine }] =
      await Promise.all([
        import('./client.js'),
        import('../dispatch/remote-runner.js'),
        import('../dispatch/remote-outcome.js'),
      ]);
    const client = resolveClientOptions({
      server: o.server,
      token: flags.token as string | undefined,
      tlsCa: flags.tlsCa as string | undefined,
      tlsCert: flags.tlsCert as string | undefined,
      tlsKey: flags.tlsKey as string | undefined,
    });
    const remote = new RemoteRunner(o.server, o.deviceEnv, authMetadata(client.token), channelCredentials(client));
    runner = remote;
    process.stderr.write(`berth dispatch: connecting to ${o.server}…\n`);
    try {
      const big = largestMachine(await remote.snapshot());
      checkFits(
        jobs,
        big.devices,
        `the largest machine of berth at ${o.server} has ` +
          `${big.devices === 0 ? 'no devices' : `${plural(big.devices, 'device')} (${big.name})`}`,
      );
    } catch (e) {
      runner.close();
      throw e;
    }
  } else {
    checkLocalLabels(jobs, warn);
    pool = new DevicePool(o.devices ?? (await detectInventory()).gpuIds);
    const hint =
      o.devices === undefined && pool.size === 0
        ? '\nno GPUs were detected on this host (nvidia-smi -L): pass --devices with the ids to hand out, ' +
          'e.g. --devices 0-3'
        : '';
    checkFits(jobs, pool.size, `${poolText(pool)}${hint}`);
    maxInFlight = jobsLimit(o.jobs, deviceSlots(jobs, pool.size), os.availableParallelism(), o.platform);
    runner = new LocalRunner(o.deviceEnv);
  }
  let logDir: string;
  try {
    logDir = o.logDir !== undefined ? prepareLogDir(o.logDir) : mkdtempSync(join(os.tmpdir(), 'berth-dispatch-'));
  } catch (e) {
    runner.close();
    throw e;
  }
  const out = process.stdout;
  const where = pool === null ? `berth at ${o.server}` : `devices ${pool.size === 0 ? 'none' : formatRange(pool.all)}`;
  out.write(
    `berth dispatch: ${plural(jobs.length, 'job')} on ${where}, -j ${maxInFlight}, ` +
      `${o.overtakes > 0 ? `backfill (≤ ${o.overtakes} overtakes)` : 'strict FIFO'}; logs in ${logDir}\n`,
  );

  const reporter = new ConsoleReporter(out, out.isTTY === true, jobs.length, o.tailLines);
  const abort = new AbortController();
  let signalled: NodeJS.Signals | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    if (signalled !== undefined) {
      killAllGroups(); // second signal: no grace
      process.exit(sig === 'SIGINT' ? 130 : 143);
    }
    signalled = sig;
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const t0 = Date.now();
  try {
    const results = await runBatch(
      jobs,
      runner,
      {
        pool,
        maxInFlight,
        backfill: o.overtakes,
        failFast: o.failFast,
        graceMs: o.grace * 1000,
        batchTimeoutMs: o.timeout === undefined ? undefined : o.timeout * 1000,
        logDir,
      },
      reporter,
      abort.signal,
    );
    const wallMs = Date.now() - t0;
    reporter.end();
    out.write(summaryText(results, logDir, wallMs));
    if (junit !== undefined) {
      const { writeJunit } = await import('../dispatch/junit.js');
      writeJunit(junit, results, wallMs);
      out.write(`junit: ${junit}\n`);
    }
    const allPassed = results.every((r) => r.status === 'passed');
    process.exitCode = signalled === 'SIGINT' ? 130 : signalled === 'SIGTERM' ? 143 : allPassed ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    runner.close();
  }
}

/** Registers the `dispatch` command. */
export function dispatchCommand(): Command {
  return new Command('dispatch')
    .description(COMMANDS.dispatch.description)
    .argument('<file>', 'batch file (YAML or JSON): { jobs: [...] } or a list of jobs')
    .option('--devices <ids>', 'device ids to hand out, e.g. 0-7 or 0,2,5 (default: GPUs detected on this host)')
    .option(
      '-j, --jobs <n|auto>',
      'most jobs at once; auto = number of devices, min(cores, devices) for a *sim platform',
      'auto',
    )
    .option('--fail-fast', 'on the first failure skip the rest and stop running jobs')
    .option('--backfill', 'let a later job that fits the free devices start ahead of a blocked one')
    .option(
      '--max-overtakes <n>',
      'with --backfill: most later jobs that may start ahead of one blocked job (default 10)',
    )
    .option('--timeout <s>', 'whole-batch timeout in seconds; running jobs are stopped, the rest skipped')
    .option('--grace <s>', 'seconds between SIGTERM and SIGKILL when stopping a job', '5')
    .option('--device-env <name>', 'variable receiving the device ids, comma-separated', 'CUDA_VISIBLE_DEVICES')
    .option('--platform <name>', 'accelerator platform; a name ending in "sim" makes -j auto use min(cores, devices)')
    .option('--junit <file>', 'write JUnit XML, one testcase per job')
    .option('--log-dir <dir>', 'directory for per-job logs (default: a new temp directory)')
    .option('--tail-lines <n>', 'lines of output shown per failed or stuck job', '50')
    .option(
      '--server <host:port,…>',
      'run the jobs through berth as Run calls instead of on this host; several: the servers of its HA cluster',
    )
    .option('--token <token>', 'token for --server [env BERTH_TOKEN]')
    .option('--tls-ca <file>', 'with --server: use TLS, trusting this CA (PEM) [env BERTH_TLS_CA]')
    .option('--tls-cert <file>', 'with --server: client certificate (PEM) for mutual TLS [env BERTH_TLS_CERT]')
    .option('--tls-key <file>', 'with --server: private key for --tls-cert (PEM) [env BERTH_TLS_KEY]')
    .addHelpText('after', EXAMPLE)
    .action(async (file: string, flags: Record<string, unknown>) => dispatch(file, flags));
}
