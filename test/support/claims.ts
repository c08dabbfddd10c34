/**
 * Test support: a Claim stream driven with the generated client, and a test-double worker that
 * holds a WorkerStream open with a Hello. Everything resolves on events, never on sleeps.
 */
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import type { Ask } from '../../generated/ts/berth/v1/resources.js';
import { Policy } from '../../generated/ts/berth/v1/resources.js';
import type {
  ClaimRequest,
  ClaimResponse,
  Granted,
  PlacementServiceClient,
  Preempting,
  Queued,
  WatchEventsResponse,
} from '../../generated/ts/berth/v1/placement.js';
import type {
  WorkerServiceClient,
  WorkerStreamRequest,
  WorkerStreamResponse,
} from '../../generated/ts/berth/v1/worker.js';

/** A complete Ask from a partial one (wire defaults). */
export function ask(a: Partial<Ask> = {}): Ask {
  return {
    gpus: 0,
    label: '',
    policy: Policy.POLICY_UNSPECIFIED,
    node: '',
    runId: '',
    env: {},
    holdMs: 0,
    resources: {},
    ...a,
  };
}

/** One open Claim stream. */
export interface ClaimHandle {
  call: ClientDuplexStream<ClaimRequest, ClaimResponse>;
  /** Resolves with the grant (rejects if the stream ends first). */
  granted: Promise<Granted>;
  /** Resolves with the first Queued. */
  queued: Promise<Queued>;
  /** Resolves with the Preempting notice, if one comes (SPEC Q2). */
  preempting: Promise<Preempting>;
  /** Resolves with the first Queued saying the preempted claim waits again (SPEC Q2 requeue). */
  requeued: Promise<Queued>;
  /** Resolves with the Granted that follows a requeue (the second grant on the stream). */
  regranted: Promise<Granted>;
  /** Sends Release with requeue (after a Preempting notice: give the room back, wait again); the stream stays. */
  makeRoom(): void;
  /** Every response so far. */
  responses: ClaimResponse[];
  /** Resolves when the stream ends: the error (null on OK). */
  ended: Promise<ServiceError | null>;
  /** Sends Release and waits for Released and the end. */
  release(): Promise<void>;
}

/** Opens a Claim stream and sends the ask. */
export function claim(client: PlacementServiceClient, a: Partial<Ask>): ClaimHandle {
  return openClaim(client, { kind: { $case: 'ask', value: ask(a) } });
}

/** Opens a Claim stream that takes back the held claim `claimId` with its resume token (SPEC S3). */
export function resumeClaim(client: PlacementServiceClient, claimId: string, resumeToken: string): ClaimHandle {
  return openClaim(client, { kind: { $case: 'resume', value: { claimId, resumeToken } } });
}

/** Opens a Claim stream and sends `first`. */
function openClaim(client: PlacementServiceClient, first: ClaimRequest): ClaimHandle {
  const call = client.claim();
  const responses: ClaimResponse[] = [];
  let onGranted!: (g: Granted) => void;
  let onQueued!: (q: Queued) => void;
  let failGranted!: (e: unknown) => void;
  const granted = new Promise<Granted>((res, rej) => ((onGranted = res), (failGranted = rej)));
  const queued = new Promise<Queued>((res) => (onQueued = res));
  let onPreempting!: (p: Preempting) => void;
  const preempting = new Promise<Preempting>((res) => (onPreempting = res));
  let onRequeued!: (q: Queued) => void;
  const requeued = new Promise<Queued>((res) => (onRequeued = res));
  let onRegranted!: (g: Granted) => void;
  let failRegranted!: (e: unknown) => void;
  const regranted = new Promise<Granted>((res, rej) => ((onRegranted = res), (failRegranted = rej)));
  regranted.catch(() => {});
  let grants = 0;
  granted.catch(() => {});
  const ended = new Promise<ServiceError | null>((resolve) => {
    call.on('error', (e: ServiceError) => {
      failGranted(e);
      failRegranted(e);
      resolve(e);
    });
    call.on('status', (s) => {
      if (s.code === 0) {
        failGranted(new Error('stream ended without a grant'));
        failRegranted(new Error('stream ended without a second grant'));
        resolve(null);
      }
    });
  });
  call.on('data', (r: ClaimResponse) => {
    responses.push(r);
    if (r.kind?.$case === 'granted') {
      if (++grants === 1) onGranted(r.kind.value);
      else onRegranted(r.kind.value);
    }
    if (r.kind?.$case === 'queued') onQueued(r.kind.value);
    if (r.kind?.$case === 'queued' && r.kind.value.requeued) onRequeued(r.kind.value);
    if (r.kind?.$case === 'preempting') onPreempting(r.kind.value);
  });
  call.write(first);
  return {
    call,
    granted,
    queued,
    preempting,
    requeued,
    regranted,
    makeRoom() {
      call.write({ kind: { $case: 'release', value: { requeue: true } } });
    },
    responses,
    ended,
    async release() {
      call.write({ kind: { $case: 'release', value: {} } });
      call.end();
      const err = await ended;
      if (err) throw err;
    },
  };
}

/** A test-double worker: sends Hello and keeps the stream open until `close()`. */
export interface FakeWorker {
  call: ClientDuplexStream<WorkerStreamRequest, WorkerStreamResponse>;
  /** Resolves once the server answered Welcome (the books have joined). */
  welcomed: Promise<void>;
  /** Frames received from the server. */
  frames: WorkerStreamResponse[];
  /** Half-closes the stream (the worker leaves). */
  close(): void;
  /** Resolves when the server ends the stream. */
  ended: Promise<ServiceError | null>;
}

/** Attaches a test-double worker. */
export function fakeWorker(
  client: WorkerServiceClient,
  name: string,
  inv: {
    cpus: number;
    gpuIds?: number[];
    ramMb?: number;
    resources?: Record<string, number>;
    gpuType?: string;
    gpuNames?: string[];
  },
  labels: string[] = [],
): FakeWorker {
  const call = client.workerStream();
  const frames: WorkerStreamResponse[] = [];
  let welcome!: () => void;
  const welcomed = new Promise<void>((r) => (welcome = r));
  const ended = new Promise<ServiceError | null>((resolve) => {
    call.on('error', (e: ServiceError) => resolve(e));
    call.on('status', (s) => s.code === 0 && resolve(null));
  });
  call.on('data', (f: WorkerStreamResponse) => {
    frames.push(f);
    if (f.frame?.$case === 'welcome') welcome();
  });
  call.write({
    frame: {
      $case: 'hello',
      value: {
        name,
        labels,
        inventory: {
          cpus: inv.cpus,
          gpuIds: inv.gpuIds ?? [],
          ramMb: inv.ramMb,
          resources: inv.resources ?? {},
          gpuType: inv.gpuType,
          gpuNames: inv.gpuNames ?? [],
        },
        maxParallel: 0,
        version: 'test',
        agentId: '',
        instanceId: '',
        heldCalls: [],
        disconnectGraceMs: 0,
      },
    },
  });
  return { call, welcomed, frames, ended, close: () => call.end() };
}

/**
 * Collects WatchEvents until cancelled (await `ready` before acting); `next(pred)` resolves with the first matching
 * event.
 */
export function watch(client: PlacementServiceClient) {
  const call = client.watchEvents({});
  const seen: WatchEventsResponse[] = [];
  let live!: () => void;
  const ready = new Promise<void>((r) => (live = r));
  const waiters: {
    pred: (e: WatchEventsResponse) => boolean;
    resolve: (e: WatchEventsResponse) => void;
    from: number;
  }[] = [];
  call.on('data', (e: WatchEventsResponse) => {
    if (e.kind === 'watch_started') return live();
    seen.push(e);
    for (const w of [...waiters])
      if (w.pred(e)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(e);
      }
  });
  call.on('error', () => {});
  return {
    seen,
    /** Resolves once the server-side subscription is live. */
    ready,
    /** The first event matching `pred` from now on. */
    next(pred: (e: WatchEventsResponse) => boolean): Promise<WatchEventsResponse> {
      return new Promise((resolve) => waiters.push({ pred, resolve, from: seen.length }));
    },
    cancel: () => call.cancel(),
  };
}
