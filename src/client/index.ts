/**
 * berth's TypeScript client for engines (`import { BerthClient } from 'berth/client'`): claims as leases
 * (`await using`), runs and streamed runs, cancel, satisfiable, snapshot, events and compile, on the
 * generated berth.v1 stubs, with one family of typed errors. See docs/typescript-client.md.
 */
export type { AskInput } from './asks.js';
export { BerthClient, type BerthClientOptions, type CallOptions, type RunOptions } from './client.js';
export type { ConnectionOptions } from './connection.js';
export {
  BerthError,
  Cancelled,
  Preempted,
  ClaimLost,
  InvalidAsk,
  NodeExited,
  NodeTimeout,
  NotFound,
  NoWorker,
  Oversize,
  RemoteError,
  ResourceExhausted,
  Unauthenticated,
  Unavailable,
  Unimplemented,
  WorkerGone,
} from './errors.js';
export { type ClaimOptions, Lease } from './lease.js';
export { Clamped, type WarningHandler } from './outcomes.js';
export type { RunInput, RunItem } from './runs.js';
export type {
  CallStarted,
  GetSnapshotResponse,
  Granted,
  Preempting,
  Queued,
  SatisfiableResponse,
  WatchEventsResponse,
  WorkerLink,
} from '../../generated/ts/berth/v1/placement.js';
export { Verdict } from '../../generated/ts/berth/v1/placement.js';
export type { Allocation, Resources } from '../../generated/ts/berth/v1/resources.js';
