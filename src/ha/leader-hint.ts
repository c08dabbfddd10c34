/**
 * The leader hint a standby gives (SPEC S7, issue 20): it answers every placement RPC and WorkerStream with
 * UNAVAILABLE, details `standby of cluster <name>: the leader is at <host:port>` and, when it knows the leader,
 * the trailer `leader: <host:port>`. Clients and workers dial the hinted address next.
 */
import type { Metadata } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';

/** The trailer naming the leader's advertised address. */
export const LEADER_TRAILER = 'leader';

const IN_DETAILS = /the leader is at (\S+?)[.,;)]?$/;
const ADDRESS = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):(\d{1,5})$/;

/** What a failed call carries: its gRPC code, details and trailers (grpc-js ServiceError / StatusObject). */
export interface FailedCall {
  code?: number;
  details?: string;
  metadata?: Metadata;
}

/**
 * The leader address a standby's UNAVAILABLE names (the `leader` trailer, else the details), or undefined
 * when `e` is no such answer or names no well-formed host:port.
 */
export function leaderHint(e: unknown): string | undefined {
  const f = e as FailedCall | undefined;
  if (!f || f.code !== status.UNAVAILABLE) return undefined;
  const trailer = f.metadata?.get?.(LEADER_TRAILER)?.[0];
  const hint = typeof trailer === 'string' ? trailer.trim() : IN_DETAILS.exec(f.details ?? '')?.[1];
  return hint && ADDRESS.test(hint) ? hint : undefined;
}

/** True when `e` is a standby's refusal (UNAVAILABLE `standby of cluster …`), leader known or not. */
export function fromStandby(e: unknown): boolean {
  const f = e as FailedCall | undefined;
  return f?.code === status.UNAVAILABLE && (f.details ?? '').startsWith('standby of cluster');
}
