/**
 * The standby gate (SPEC S7, issue 20): the one place where a server that does not lead its cluster answers.
 * Every berth.v1 RPC (PlacementService and WorkerService.WorkerStream) is wrapped once, at `addService`; while
 * `gate()` returns an answer, a call ends at once UNAVAILABLE `standby of cluster <name>: the leader is at <addr>`
 * (or `… no leader elected yet`) with the trailer `leader: <addr>` when known, before its request is read or its
 * token checked (the answer names only the leader, which every client may know). Health and reflection are not
 * wrapped: a standby is live. Once the gate opens, calls go straight to their handlers.
 */
import { Metadata, status, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { StatusObject } from './status.js';

/** Why a server does not serve now: its cluster and the leader's advertised address ('' while none is known). */
export interface StandbyAnswer {
  cluster: string;
  leader: string;
}

/** The status a standby ends every call with. */
export function standbyStatus(a: StandbyAnswer): StatusObject {
  const where = a.leader ? `the leader is at ${a.leader}` : 'no leader elected yet';
  const details = `standby of cluster ${a.cluster}: ${where}`;
  const metadata = new Metadata();
  if (a.leader) metadata.set('leader', a.leader);
  return { code: status.UNAVAILABLE, details, message: details, metadata };
}

type AnyCall = { emit(event: 'error', err: unknown): boolean };
type Handler = (call: AnyCall, callback?: (err: StatusObject) => void) => void;

/**
 * `impl` with each handler answering `standbyStatus(gate())` while `gate()` returns an answer, and calling the
 * handler itself once it returns undefined. Read per call: a standby that takes over serves its next call.
 */
export function gated<S extends object>(
  definition: ServiceDefinition,
  impl: S,
  gate: () => StandbyAnswer | undefined,
): S {
  const out: Record<string, Handler> = {};
  for (const [name, handler] of Object.entries(impl as UntypedServiceImplementation) as Array<[string, Handler]>) {
    const unaryResponse = !definition[name]?.responseStream;
    out[name] = (call, callback) => {
      const answer = gate();
      if (!answer) return handler(call, callback);
      if (unaryResponse) callback?.(standbyStatus(answer));
      else call.emit('error', standbyStatus(answer));
    };
  }
  return out as S;
}
