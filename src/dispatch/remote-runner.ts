/**
 * RemoteRunner: runs jobs through a berth server as `Run` calls (SPEC D8), so they can land on
 * any attached worker. Each job is one Run stream with an ask of `gpus: devices` (and one core for a
 * job with no devices, so CPU-only jobs are bounded by cores; a job's `require:`/`prefer:` label as the ask's label
 * and policy) and a command payload; berth picks the machine and the
 * device ids (the reply's CallStarted names them) and replaces `{devices}` itself. Log lines stream into the job's
 * OutputCapture. Stopping calls Cancel(run_id) (the worker SIGTERMs, then SIGKILLs) and drops the stream after the
 * grace. A call berth refuses (INVALID_ARGUMENT, UNAUTHENTICATED, FAILED_PRECONDITION…), a grant with fewer devices
 * than the job needs (berth clamps an ask to the best machine left, P5) and a machine that goes away make the job an
 * `error` whose message says which; only a missing program (the worker's SpawnError) is a `spawn_error`.
 */
import { credentials, Metadata, status as GrpcStatus, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import {
  PlacementServiceClient,
  type GetSnapshotResponse,
  type RunRequest,
  type RunResponse,
} from '../../generated/ts/berth/v1/placement.js';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import { OptionsError } from '../config/fields.js';
import { onLeader, splitServers } from '../ha/on-leader.js';
import type { OutputCapture } from './capture.js';
import type { Job, JobRun, RunEnd, Runner, StartInfo } from './job.js';
import { describeCallError, endOf } from './remote-outcome.js';

/** A node name berth accepts (letters, digits, _ . -; ≤ 128) made from the job's number and label. */
export function nodeName(job: Job): string {
  return `${job.index + 1}-${job.name.replace(/[^A-Za-z0-9_.-]+/g, '_')}`.slice(0, 128);
}

/** True when `job` asks a share of one device (`devices: 0.5`). */
function isShareJob(job: Job): boolean {
  return job.devices > 0 && job.devices < 1;
}

/**
 * The RunRequest for `job` under `runId`. berth sets CUDA_VISIBLE_DEVICES on the call; another
 * `deviceEnv` is filled from it by a `sh` wrapper on the machine that runs the job.
 */
export function runRequestFor(job: Job, runId: string, deviceEnv: string): RunRequest {
  let argv = job.argv ?? ['sh', '-c', job.shell ?? ''];
  if (deviceEnv !== 'CUDA_VISIBLE_DEVICES')
    argv = ['sh', '-c', `export ${deviceEnv}="$CUDA_VISIBLE_DEVICES"; exec "$@"`, 'sh', ...argv];
  return {
    placement: {
      $case: 'ask',
      value: {
        cpus: job.devices > 0 ? 0 : 1,
        // a share of one device is the ask's GPU share (SPEC P14): ask.gpus stays 0
        gpus: isShareJob(job) ? 0 : job.devices,
        ...(isShareJob(job) ? { gpuShare: job.devices } : {}),
        ramMb: undefined,
        resources: job.resources ?? {},
        // require:/prefer: a machine label, as the ask's label and policy (berth's placement rules)
        label: job.machine?.label ?? '',
        policy:
          job.machine === undefined
            ? 0
            : job.machine.policy === 'require'
              ? Policy.POLICY_REQUIRE
              : Policy.POLICY_PREFER,
        node: `dispatch.${nodeName(job)}`,
        runId,
        env: {},
        holdMs: 0,
      },
    },
    // no cwd: dispatch's own, as for a local job (relative ones are already resolved against the batch file)
    payload: { $case: 'command', value: { argv, env: job.env, cwd: job.cwd ?? process.cwd() } },
    flow: 'dispatch',
    node: nodeName(job),
    runId,
    timeoutMs: 0,
    disconnectGraceMs: 0,
    // `retries:` (SPEC S8): placed again when its machine is lost; a job's own non-zero exit is its result
    maxRetries: job.retries ?? 0,
    retryOnFailure: false,
    follow: undefined,
  };
}

/** Runs jobs through the berth server at `address` (or the leader of the HA cluster it lists, SPEC S7). */
export class RemoteRunner implements Runner {
  #client: PlacementServiceClient;
  readonly #creds: ChannelCredentials;
  readonly #batchId = `dispatch-${process.pid}-${Date.now().toString(36)}`;

  /**
   * @param address host:port of `berth serve`, or several comma-separated (an HA cluster: snapshot() finds the
   * leader, and the jobs run there); @param deviceEnv variable that receives the device range;
   * @param metadata sent with every call (e.g. the bearer token); @param creds channel credentials (TLS, mutual TLS;
   * default plaintext).
   */
  constructor(
    readonly address: string,
    readonly deviceEnv: string,
    readonly metadata: Metadata = new Metadata(),
    creds: ChannelCredentials = credentials.createInsecure(),
  ) {
    this.#creds = creds;
    this.#client = new PlacementServiceClient(splitServers(address)[0], creds);
  }

  /** See Runner.start. Device ids come from the server; `ids` is ignored. */
  start(job: Job, _ids: number[], capture: OutputCapture, onStarted: (info: StartInfo) => void): JobRun {
    const runId = `${this.#batchId}-${job.index + 1}`;
    const call = this.#client.run(runRequestFor(job, runId, this.deviceEnv), this.metadata);
    let last: RunResponse['kind'];
    let ended = false;
    let dropTimer: NodeJS.Timeout | undefined;
    let machine: string | undefined;
    /** Why dispatch dropped the call itself (a clamped grant). */
    let refused: string | undefined;
    const done = new Promise<RunEnd>((resolve) => {
      call.on('data', (m: RunResponse) => {
        const k = m.kind;
        if (refused !== undefined) return;
        if (k?.$case === 'started') {
          const devices = [...(k.value.allocation?.gpuIds ?? [])].sort((a, b) => a - b);
          if (devices.length < Math.ceil(job.devices)) {
            // berth clamped the ask (a machine left since the batch was checked): do not run it short
            refused =
              `berth granted ${devices.length} of the ${job.devices} devices it needs (on ` +
              `${k.value.machine}: ${devices.length === 0 ? 'none' : devices.join(',')}); not run`;
            this.#client.cancel({ runId }, this.metadata, () => {});
            call.cancel();
            return;
          }
          const again = machine !== undefined; // a retry's attempt (SPEC S8): the job started already
          machine = k.value.machine;
          if (!again) onStarted({ machine, devices });
        } else if (k?.$case === 'retrying') {
          // the job asked `retries:` and its machine was lost: its output log says so, then the new attempt's output
          capture.write(Buffer.from(`[berth] ${k.value.reason}: attempt ${k.value.attempt} (${k.value.callId})\n`));
        } else if (k?.$case === 'event' && k.value.kind?.$case === 'log')
          capture.write(Buffer.from(`${k.value.kind.value.line}\n`));
        else if (k?.$case === 'event' && k.value.kind?.$case === 'logs')
          capture.write(Buffer.from(`${k.value.kind.value.lines.join('\n')}\n`)); // a batch of lines, in order
        else if (k?.$case === 'result' || k?.$case === 'failure') {
          last = k;
          if (k.$case === 'failure' && k.value.traceback !== '') capture.write(Buffer.from(k.value.traceback));
        }
      });
      call.on('error', (err: ServiceError) => {
        ended = true;
        clearTimeout(dropTimer);
        if (refused !== undefined) resolve({ exitCode: null, signal: null, error: refused });
        else if (machine !== undefined && err.code === GrpcStatus.CANCELLED)
          resolve({ exitCode: null, signal: null, error: `cancelled through berth (${err.details})` });
        else resolve({ exitCode: null, signal: null, error: describeCallError(this.address, err, machine) });
      });
      call.on('end', () => {
        ended = true;
        clearTimeout(dropTimer);
        if (refused !== undefined) resolve({ exitCode: null, signal: null, error: refused });
        else
          resolve(
            last !== undefined
              ? endOf(last)
              : { exitCode: null, signal: null, error: `berth at ${this.address} ended the call without a result` },
          );
      });
    });
    return {
      done,
      stop: (graceMs: number) => {
        if (ended || dropTimer !== undefined) return;
        this.#client.cancel({ runId }, this.metadata, () => {});
        dropTimer = setTimeout(() => call.cancel(), graceMs);
      },
      dumpStack: () => false,
    };
  }

  /**
   * One GetSnapshot with the token, within `timeoutMs`: proves the server answers and takes the
   * token, and tells what machines it has (for D2). Fails at the first connection error with its
   * real cause (ECONNREFUSED, DNS), as `berth status` does.
   * @throws OptionsError naming --token/BERTH_TOKEN on UNAUTHENTICATED (CLI exit 2); Error naming
   * the address otherwise (exit 1).
   */
  async snapshot(timeoutMs = 5_000): Promise<GetSnapshotResponse> {
    const ask = (client: PlacementServiceClient) =>
      new Promise<GetSnapshotResponse>((resolve, reject) =>
        client.getSnapshot({}, this.metadata, { deadline: Date.now() + timeoutMs }, (err, res) =>
          err ? reject(err) : resolve(res!),
        ),
      );
    try {
      if (splitServers(this.address).length === 1) return await ask(this.#client);
      const { result } = await onLeader(this.address, async (address) => {
        const client = new PlacementServiceClient(address, this.#creds);
        const res = await ask(client).catch((e: unknown) => {
          client.close();
          throw e;
        });
        this.#client.close();
        this.#client = client; // the leader: the jobs run there
        return res;
      });
      return result;
    } catch (e) {
      const err = e as ServiceError;
      if (err.code === GrpcStatus.UNAUTHENTICATED)
        throw new OptionsError(
          `--token/BERTH_TOKEN: berth at ${this.address} refused the token (UNAUTHENTICATED: ` +
            `${err.details}); give its token with --token or BERTH_TOKEN`,
        );
      const why = (err.details || err.message).replace(/[.\s]*Resolution note:\s*$/, '');
      throw new Error(`cannot reach berth at ${this.address}: ${why}`);
    }
  }

  /** See snapshot(). */
  async ready(): Promise<void> {
    await this.snapshot();
  }

  /** Closes the channel. */
  close(): void {
    this.#client.close();
  }
}
