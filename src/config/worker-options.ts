/**
 * Options of `berth worker`, validated and defaulted once: flags win over BERTH_* env vars,
 * which win over defaults.
 */
import os from 'node:os';
import { join } from 'node:path';
import * as z from 'zod';
import {
  gpuTypeSchema,
  serverList,
  gpuIds,
  type FlagTable,
  labelList,
  namedList,
  logLevel,
  plainName,
  OptionsError,
  readableFile,
  resolveOptions,
  seconds,
  wholeNumber,
} from './fields.js';

/** A device name as `--gpu-names` takes it. */
const DEVICE_NAME = /^[A-Za-z0-9_.:/-]{1,128}$/;

/** Longest `--disconnect-grace`, in seconds (one day). */
export const MAX_DISCONNECT_GRACE_S = 86_400;

const schema = z.object({
  server: serverList.default('127.0.0.1:50051'),
  name: plainName.default(os.hostname().split('.')[0] || 'worker'),
  labels: labelList.default([]),
  cpus: wholeNumber(0, 65536).optional(),
  gpus: gpuIds.optional(), // a bare number is refused (issue 23 item 7)
  ramMb: wholeNumber(0, 1 << 30).optional(),
  /** Named per-machine resources (issue 23), units of 1e-4. */
  resources: namedList.optional(),
  /** The type of this machine's GPUs, e.g. a100 or a MIG profile 1g.10gb (issue 23 item 4). */
  gpuType: gpuTypeSchema.optional(),
  /**
   * Device names CUDA_VISIBLE_DEVICES gets, in the order of the GPU ids (UUIDs, MIG instances; issue 23 item 4):
   * `GPU-5f3c…,MIG-…`. Without --gpus the machine offers ids 0…n-1 for them.
   */
  gpuNames: z
    .string()
    .transform((v) => v.split(',').map((x) => x.trim()))
    .pipe(z.array(z.string().regex(DEVICE_NAME, 'a device name holds 1–128 letters, digits and _ . : / -')).max(4096))
    .optional(),
  maxParallel: wholeNumber(0, 65536).default(0),
  grace: seconds.default(10),
  disconnectGrace: seconds
    .pipe(z.number().max(MAX_DISCONNECT_GRACE_S, `must be at most ${MAX_DISCONNECT_GRACE_S} (one day)`))
    .default(120),
  token: z.string().min(1, 'must not be empty').optional(),
  logLevel: logLevel.default('info'),
  tlsCa: readableFile.optional(),
  tlsCert: readableFile.optional(),
  tlsKey: readableFile.optional(),
  stateDir: z.string().min(1, 'must not be empty').optional(),
});

/**
 * Validated `berth worker` options. Units: `grace` and `disconnectGrace` (how long calls run on without a
 * stream to the server, SPEC S1) in seconds, `ramMb` in MB; maxParallel 0 = unlimited.
 * `tlsCa` turns TLS on (trusting that CA); `tlsCert`/`tlsKey` add a client certificate (mutual TLS).
 * `stateDir`: where the agent records its process groups (SPEC R5; default defaultStateDir()).
 */
export type WorkerOptions = z.output<typeof schema> & { stateDir: string };

const FLAGS: FlagTable = {
  server: ['--server', 'BERTH_SERVER'],
  name: ['--name', 'BERTH_WORKER_NAME'],
  labels: ['--labels', 'BERTH_WORKER_LABELS'],
  cpus: ['--cpus', 'BERTH_CPUS'],
  gpus: ['--gpus', 'BERTH_GPUS'],
  ramMb: ['--ram-mb', 'BERTH_RAM_MB'],
  resources: ['--resources', 'BERTH_RESOURCES'],
  gpuType: ['--gpu-type', 'BERTH_GPU_TYPE'],
  gpuNames: ['--gpu-names', 'BERTH_GPU_NAMES'],
  maxParallel: ['--max-parallel', 'BERTH_MAX_PARALLEL'],
  grace: ['--grace', 'BERTH_GRACE'],
  disconnectGrace: ['--disconnect-grace', 'BERTH_DISCONNECT_GRACE'],
  token: ['--token', 'BERTH_TOKEN'],
  logLevel: ['--log-level', 'BERTH_LOG_LEVEL'],
  tlsCa: ['--tls-ca', 'BERTH_TLS_CA'],
  tlsCert: ['--tls-cert', 'BERTH_TLS_CERT'],
  tlsKey: ['--tls-key', 'BERTH_TLS_KEY'],
  stateDir: ['--state-dir', 'BERTH_STATE_DIR'],
};

/**
 * Merges flags and env into validated options.
 * @throws OptionsError naming the flag (or env var) and the bad value.
 */
export function resolveWorkerOptions(
  flags: Record<string, unknown>,
  env: NodeJS.ProcessEnv = process.env,
): WorkerOptions {
  const opts = resolveOptions(schema, FLAGS, flags, env);
  if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined))
    throw new OptionsError('--tls-cert and --tls-key must be given together');
  if (opts.tlsCert && !opts.tlsCa)
    throw new OptionsError('--tls-cert needs --tls-ca (the CA that signed the server certificate)');
  return { ...opts, stateDir: opts.stateDir ?? defaultStateDir(opts.name, opts.server, env) };
}

/**
 * Default `--state-dir`: `$XDG_STATE_HOME/berth/worker-<name>@<server>` (XDG_STATE_HOME defaults to
 * ~/.local/state), so a restarted worker of the same name and server finds its predecessor's record.
 */
export function defaultStateDir(name: string, server: string, env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME || join(os.homedir(), '.local', 'state');
  return join(base, 'berth', `worker-${name}@${server.replace(/[^A-Za-z0-9_.-]/g, '_')}`);
}

/** The flag table and schema of `berth worker`, read by the generated reference (scripts/gen-reference.ts). */
export { FLAGS as WORKER_FLAGS, schema as workerSchema };
