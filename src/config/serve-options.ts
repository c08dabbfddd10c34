/**
 * Options of `berth serve`, validated and defaulted once: flags win over BERTH_* env vars, which
 * win over the config file (`--config`, issue 12), which wins over defaults. Loopback is the
 * default bind (SPEC R2).
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import * as z from 'zod';
import { readTokenFile } from './token-file.js';
import type { PriorityClasses } from '../placement/priority.js';
import type { TenantQuotas } from '../placement/quota.js';
import { readConfigFile } from './config-file.js';
import type { ProvisionerConfig } from './provisioner-options.js';
import { checkEtcdOptions, storeUrl } from './etcd-options.js';
import {
  address,
  gpuTypeSchema,
  duration,
  gpuIds,
  type FlagTable,
  holdSeconds,
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

/** Default listen address: loopback only. */
export const DEFAULT_LISTEN = '127.0.0.1:50051';

const schema = z.object({
  listen: address.default(DEFAULT_LISTEN),
  cpus: wholeNumber(0, 65536).optional(),
  gpus: gpuIds.optional(), // a bare number is refused (issue 23 item 7)
  ramMb: wholeNumber(0, 1 << 30).optional(),
  /** Named per-machine resources (issue 23), units of 1e-4. */
  resources: namedList.optional(),
  /** The type of the engine host's GPUs (issue 23 item 4), for asks naming gpu_type; needs GPUs. */
  gpuType: gpuTypeSchema.optional(),
  engineName: plainName.default('engine'),
  engineLabels: labelList.optional(),
  grace: seconds.default(10),
  reconnectGrace: seconds.default(30),
  /** How long a broken worker link holds its calls that asked for no hold (SPEC S2). */
  workerHold: holdSeconds.default(2),
  /** After a restart, how long a worker the journal knows is held for its agent to come back (SPEC S6). */
  restartHold: seconds.default(60),
  /** After a restart, how long a journaled claim awaits its holder before it is released (SPEC S3). */
  claimHold: seconds.default(30),
  /** How long a preempted claim's holder has to give it back before berth releases it (SPEC Q2). */
  preemptionGrace: seconds.default(30),
  /** Claims held less than this are not preempted yet (SPEC Q2; Slurm's PreemptExemptTime). */
  preemptionMinRuntime: seconds.default(0),
  /** The same work (owner, run, node) is preempted at most this many times per `preemptionWindow` (SPEC Q2). */
  preemptionLimit: wholeNumber(1, 1_000_000).default(3),
  /** The window of `preemptionLimit`, in seconds. */
  preemptionWindow: seconds.default(600),
  /** `off`: no journal, nothing survives a restart (the behaviour before issue 19; for comparison). */
  journal: z.enum(['on', 'off'], { error: "expected 'on' or 'off'" }).default('on'),
  /**
   * `on`: the engine host's command calls run in the engine keeper, a local `berth worker` this server starts and
   * re-adopts after a restart, so they outlive the server (issue 19 item 5); `off`: as children of the server.
   * Needs the journal and no TLS (else off).
   */
  engineKeeper: z.enum(['on', 'off'], { error: "expected 'on' or 'off'" }).default('on'),
  /** How long finished calls and ended claims stay in the history, in s (SPEC S9): a day by default. */
  historyRetention: duration.default(86_400),
  /** Most finished calls and ended claims the history keeps (the oldest go first). */
  historyMax: wholeNumber(1, 10_000_000).default(100_000),
  token: z.string().min(1, 'must not be empty').optional(),
  logLevel: logLevel.default('info'),
  tlsCert: readableFile.optional(),
  tlsKey: readableFile.optional(),
  tlsCa: readableFile.optional(),
  workerTokens: readableFile.optional(),
  clientTokens: readableFile.optional(),
  /** Opt-in HTTP port for /metrics and the status page (issue 13); off unless given. */
  metricsListen: address.optional(),
  stateDir: z.string().min(1, 'must not be empty').optional(),
  advertise: address.optional(),
  /** What SIGTERM/SIGINT do (SPEC S5): `stop` the control plane and leave the work running, or `drain` (SPEC R3). */
  onStop: z.enum(['stop', 'drain'], { error: 'expected stop or drain' }).default('stop'),
  /** Cluster-wide pools (issue 23), e.g. licenses: name → size in units of 1e-4. */
  pools: namedList.optional(),
  /** Memory an ask without `ram_mb` gets per core it asks, in MB (issue 23 item 2, Slurm's DefMemPerCPU); 0 = none. */
  defaultRamMbPerCpu: wholeNumber(0, 1 << 20).default(0),
  /** Where the journal lives (issue 20): unset or `embedded`, under --state-dir; `etcd://h:p[,h:p…]`, in etcd. */
  store: storeUrl.optional(),
  /** The cluster several servers on one etcd share (SPEC S7): etcd key prefix `/berth/<cluster>`. */
  cluster: plainName.default('default'),
  /** The leader's etcd lease TTL in whole seconds (SPEC S7): a dead leader is replaced within about this. */
  leaderTtl: wholeNumber(2, 600).default(5),
  etcdCa: readableFile.optional(),
  etcdCert: readableFile.optional(),
  etcdKey: readableFile.optional(),
  etcdUser: z.string().min(1, 'must not be empty').optional(),
  etcdPasswordFile: readableFile.optional(),
});

/**
 * Validated `berth serve` options. Units: `grace`, `reconnectGrace`, `workerHold`, `restartHold`, `claimHold`,
 * `preemptionGrace`, `preemptionMinRuntime`, `preemptionWindow` and `historyRetention` in seconds; `ramMb` and
 * `defaultRamMbPerCpu` (memory per core asked, for asks without `ram_mb`) in MB.
 * `workerTokens` / `clientTokens`: YAML files of name → token (SPEC R7, see token-file.ts).
 * `stateDir`: the journal (SPEC S4), where provisioned workers log and local ones keep their records (default
 * $XDG_STATE_HOME/berth or ~/.local/state/berth); one server per directory;
 * `advertise`: the address started workers dial (default: the bound listen address);
 * `onStop`: what SIGTERM/SIGINT do, `stop` (default: the control plane stops, the work keeps running; SPEC S5) or
 * `drain` (SPEC R3);
 * `provisioners`: from the config file (SPEC V1), [] without one; `priorityClasses`: the file's
 * `priority_classes:` (SPEC Q1), {} without them; `tenants`: the file's `tenants:` quotas (SPEC Q3), {} without them;
 * `store`: the etcd endpoints when the journal is in etcd (SPEC S7; unset: the embedded journal), `cluster` its key
 * prefix `/berth/<cluster>`, `leaderTtl` the leader lease in seconds, `etcd*` TLS files and credentials for etcd.
 */
export type ServeOptions = z.output<typeof schema> & {
  stateDir: string;
  provisioners: ProvisionerConfig[];
  priorityClasses: PriorityClasses;
  tenants: TenantQuotas;
  config?: string;
};

const FLAGS: FlagTable = {
  listen: ['--listen', 'BERTH_LISTEN'],
  cpus: ['--cpus', 'BERTH_CPUS'],
  gpus: ['--gpus', 'BERTH_GPUS'],
  ramMb: ['--ram-mb', 'BERTH_RAM_MB'],
  resources: ['--resources', 'BERTH_RESOURCES'],
  gpuType: ['--gpu-type', 'BERTH_GPU_TYPE'],
  engineName: ['--engine-name', 'BERTH_ENGINE_NAME'],
  engineLabels: ['--engine-labels', 'BERTH_ENGINE_LABELS'],
  grace: ['--grace', 'BERTH_GRACE'],
  reconnectGrace: ['--reconnect-grace', 'BERTH_RECONNECT_GRACE'],
  workerHold: ['--worker-hold', 'BERTH_WORKER_HOLD'],
  restartHold: ['--restart-hold', 'BERTH_RESTART_HOLD'],
  claimHold: ['--claim-hold', 'BERTH_CLAIM_HOLD'],
  preemptionGrace: ['--preemption-grace', 'BERTH_PREEMPTION_GRACE'],
  preemptionMinRuntime: ['--preemption-min-runtime', 'BERTH_PREEMPTION_MIN_RUNTIME'],
  preemptionLimit: ['--preemption-limit', 'BERTH_PREEMPTION_LIMIT'],
  preemptionWindow: ['--preemption-window', 'BERTH_PREEMPTION_WINDOW'],
  journal: ['--journal', 'BERTH_JOURNAL'],
  engineKeeper: ['--engine-keeper', 'BERTH_ENGINE_KEEPER'],
  historyRetention: ['--history-retention', 'BERTH_HISTORY_RETENTION'],
  historyMax: ['--history-max', 'BERTH_HISTORY_MAX'],
  token: ['--token', 'BERTH_TOKEN'],
  logLevel: ['--log-level', 'BERTH_LOG_LEVEL'],
  tlsCert: ['--tls-cert', 'BERTH_TLS_CERT'],
  tlsKey: ['--tls-key', 'BERTH_TLS_KEY'],
  tlsCa: ['--tls-ca', 'BERTH_TLS_CA'],
  workerTokens: ['--worker-tokens', 'BERTH_WORKER_TOKENS'],
  clientTokens: ['--client-tokens', 'BERTH_CLIENT_TOKENS'],
  metricsListen: ['--metrics-listen', 'BERTH_METRICS_LISTEN'],
  stateDir: ['--state-dir', 'BERTH_STATE_DIR'],
  advertise: ['--advertise', 'BERTH_ADVERTISE'],
  onStop: ['--on-stop', 'BERTH_ON_STOP'],
  pools: ['--pools', 'BERTH_POOLS'],
  defaultRamMbPerCpu: ['--default-ram-mb-per-cpu', 'BERTH_DEFAULT_RAM_MB_PER_CPU'],
  store: ['--store', 'BERTH_STORE'],
  cluster: ['--cluster', 'BERTH_CLUSTER'],
  leaderTtl: ['--leader-ttl', 'BERTH_LEADER_TTL'],
  etcdCa: ['--etcd-ca', 'BERTH_ETCD_CA'],
  etcdCert: ['--etcd-cert', 'BERTH_ETCD_CERT'],
  etcdKey: ['--etcd-key', 'BERTH_ETCD_KEY'],
  etcdUser: ['--etcd-user', 'BERTH_ETCD_USER'],
  etcdPasswordFile: ['--etcd-password-file', 'BERTH_ETCD_PASSWORD_FILE'],
};

/** The user's state home for berth: $XDG_STATE_HOME/berth, else ~/.local/state/berth. */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME?.startsWith('/')
    ? env.XDG_STATE_HOME
    : join(env.HOME || homedir(), '.local', 'state');
  return join(base, 'berth');
}

/**
 * Merges flags, env and the config file (`flags.config` or BERTH_CONFIG) into validated options.
 * @throws OptionsError naming the flag, env var or file line, and the bad value.
 */
export function resolveServeOptions(
  flags: Record<string, unknown>,
  env: NodeJS.ProcessEnv = process.env,
): ServeOptions {
  const configPath = typeof flags.config === 'string' ? flags.config : env.BERTH_CONFIG || undefined;
  const file = configPath === undefined ? undefined : readConfigFile(configPath, Object.keys(FLAGS));
  const opts = resolveOptions(schema, FLAGS, flags, env, file);
  if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined)) {
    throw new OptionsError('--tls-cert and --tls-key must be given together');
  }
  if (opts.clientTokens && !opts.workerTokens && !opts.token && !opts.tlsCa) {
    throw new OptionsError(
      '--client-tokens needs --worker-tokens, --token or --tls-ca too: ' +
        "otherwise anyone could attach a worker and receive the clients' calls",
    );
  }
  if (opts.workerTokens && file?.provisioners?.length) {
    throw new OptionsError(
      `--worker-tokens with provisioners (${configPath}): the workers a provisioner starts attach with the shared ` +
        '--token, which --worker-tokens refuses; use --token without --worker-tokens, or no provisioners',
    );
  }
  checkEtcdOptions(opts);
  if (opts.workerTokens) readTokenFile('--worker-tokens', opts.workerTokens);
  if (opts.clientTokens) readTokenFile('--client-tokens', opts.clientTokens);
  return {
    ...opts,
    stateDir: opts.stateDir ?? defaultStateDir(env),
    provisioners: file?.provisioners ?? [],
    priorityClasses: file?.priorityClasses ?? {},
    tenants: file?.tenants ?? {},
    config: configPath,
  };
}

/** The flag table and schema of `berth serve`, read by the generated reference (scripts/gen-reference.ts). */
export { FLAGS as SERVE_FLAGS, schema as serveSchema };
