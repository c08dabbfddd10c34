/**
 * What the client makes of a call's ending and of a clamped grant: a node's Failure thrown as a
 * RemoteError keeping its class name and traceback (NodeExited for `sys.exit`), and clamping never
 * silent (SPEC P11) — a `Clamped` warning through the client's `onWarning`, by default
 * `process.emitWarning` (a warning of type "Clamped"), as the Python client warns `Clamped`.
 */
import type { Failure } from '../../generated/ts/berth/v1/calls.js';
import type { Allocation, Resources } from '../../generated/ts/berth/v1/resources.js';
import { NodeExited, RemoteError } from './errors.js';

/** The error to throw for a node's Failure: NodeExited for SystemExit, else a RemoteError named after its type. */
export function remoteError(f: Failure): RemoteError {
  if (f.type === 'SystemExit') return new NodeExited(exitCode(f.message), f.traceback, f.callId);
  return new RemoteError(f.message, f.type, f.traceback, f.callId);
}

/** SystemExit's code as the harness sends it (`str(exc)`): "" → 0, "3" → 3, any other text kept. */
function exitCode(message: string): number | string {
  if (!message) return 0;
  return /^-?\d+$/.test(message) ? Number(message) : message;
}

/** A warning that an ask was cut down to the best real machine (SPEC P5, P11); `asked` → `granted`. */
export class Clamped extends Error {
  constructor(
    message: string,
    readonly asked: Resources | undefined,
    readonly granted: Resources,
  ) {
    super(message);
  }
}
Clamped.prototype.name = 'Clamped';

/** Receives the client's warnings (option `onWarning`); the default is `process.emitWarning`. */
export type WarningHandler = (warning: Clamped) => void;

/** Node's own warning channel: printed once per process by default, observable with process.on('warning'). */
export const emitWarning: WarningHandler = (w) => process.emitWarning(w);

/** Warns `Clamped` for a Granted or CallStarted that says clamped; `what` names it ("claim study.fit"). */
export function warnClamped(
  what: string,
  g: { clamped: boolean; machine: string; allocation: Allocation | undefined; asked: Resources | undefined },
  warn: WarningHandler,
): void {
  if (!g.clamped) return;
  const a = g.allocation;
  const granted: Resources = {
    cpus: a?.cpus ?? 0,
    gpus: a?.gpuIds.length ?? 0,
    ramMb: a?.ramMb,
    resources: a?.resources ?? {},
  };
  const asked = g.asked ? `asked ${amount(g.asked)}, ` : '';
  warn(
    new Clamped(
      `${what} was clamped to the best real machine ${g.machine}: ${asked}granted ${amount(granted)}`,
      g.asked,
      granted,
    ),
  );
}

/** "2 cpu(s), 1 gpu(s)[, 512 MB]", as the server's details read. */
function amount(r: Resources): string {
  return [`${r.cpus} cpu(s)`, `${r.gpus} gpu(s)`, ...(r.ramMb === undefined ? [] : [`${r.ramMb} MB`])].join(', ');
}
