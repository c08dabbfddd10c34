/**
 * What `--server` calls mean for a job and for the user (SPEC D8): how a Run stream's last message
 * ends a job, how a call error is told (blaming the machine when it went away, the server when it
 * cannot be reached or refuses), and the largest machine of a snapshot (D2's bound).
 */
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { GetSnapshotResponse, RunResponse } from '../../generated/ts/berth/v1/placement.js';
import type { RunEnd } from './job.js';

/**
 * How a call ended, from its last message: a command Result `{exit_code: N}`; a Failure of type
 * `ExitCode` ("<file> exited with code N" / "<file> killed by SIGTERM"); `SpawnError` → spawnError.
 */
export function endOf(msg: RunResponse['kind']): RunEnd {
  if (msg?.$case === 'result') {
    const v: unknown = msg.value.value;
    const code =
      v !== null && typeof v === 'object' && 'exit_code' in v ? Number((v as { exit_code: unknown }).exit_code) : 0;
    return { exitCode: Number.isFinite(code) ? code : 0, signal: null };
  }
  if (msg?.$case === 'failure') {
    const f = msg.value;
    if (f.type === 'SpawnError') return { exitCode: null, signal: null, spawnError: f.message };
    const code = /exited with code (-?\d+)/.exec(f.message)?.[1];
    const sig = /killed by (SIG[A-Z0-9]+)/.exec(f.message)?.[1];
    if (code !== undefined) return { exitCode: Number(code), signal: null };
    if (sig !== undefined) return { exitCode: null, signal: sig };
    return { exitCode: null, signal: null, error: `${f.type}: ${f.message}` };
  }
  return { exitCode: null, signal: null, error: 'the call ended without a result' };
}

/**
 * What went wrong with a job's call, for the user: the machine when it went away (`machine`: where
 * the job ran, if it started), the server when it cannot be reached or refuses the job.
 */
export function describeCallError(
  address: string,
  err: Pick<ServiceError, 'code' | 'details'>,
  machine?: string,
): string {
  const name = GrpcStatus[err.code] ?? String(err.code);
  if (err.code === GrpcStatus.UNIMPLEMENTED)
    return `berth at ${address} cannot run jobs (UNIMPLEMENTED: ${err.details})`;
  if (err.code === GrpcStatus.CANCELLED) return `cancelled while waiting in berth's queue (${err.details})`;
  if (err.code === GrpcStatus.UNAVAILABLE && /went away/.test(err.details)) {
    return (
      `${machine !== undefined ? `machine ${machine}` : 'the machine berth placed it on'} went away, ` +
      `the job's outcome is unknown (${err.details})`
    );
  }
  if (err.code === GrpcStatus.UNAVAILABLE) return `berth at ${address} is unreachable (UNAVAILABLE: ${err.details})`;
  return `berth at ${address} refused the job (${name}: ${err.details})`;
}

/** The most GPUs on any one machine of a snapshot (D2's bound in `--server` mode), with that machine's name. */
export function largestMachine(s: GetSnapshotResponse): { name: string; devices: number } {
  let best = { name: '', devices: 0 };
  for (const m of s.machines) {
    const n = m.total?.gpuIds.length ?? 0;
    if (n > best.devices || best.name === '') best = { name: m.name, devices: n };
  }
  return best;
}
