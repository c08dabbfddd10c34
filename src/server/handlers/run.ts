/**
 * Run RPC: one call of a node (SPEC "The contract", W2–W4). Inside a held claim (`claim_id`: its
 * machine and allocation) or as place → run → release (an ask). Streams Started, the call's
 * events in order, then exactly one Result or Failure. One call id `<run_id>:<flow>.<node>`, one
 * execution: a Run whose call id is in flight or being placed follows that call (CallIds). A Run
 * inside a claim ends CANCELLED "claim <id> released" when the claim is released (SPEC R5). Errors:
 * INVALID_ARGUMENT, FAILED_PRECONDITION (label), NOT_FOUND (claim_id), UNAVAILABLE ("went away"),
 * DEADLINE_EXCEEDED (timeout_ms, the worker is sent a Cancel), CANCELLED. While the link to the call's worker
 * is down the caller gets WorkerLink items (DISCONNECTED with the hold left, RECONNECTED), in order with the
 * events; `disconnect_grace_ms` (0 to 3,600,000) is the call's hold (SPEC S2). When client identities
 * are configured, another identity's claim_id is NOT_FOUND and its call id FAILED_PRECONDITION (SPEC R7).
 * `follow` (SPEC S3) follows a call already started from the caller's last event sequence number instead: NOT_FOUND
 * when no such call is in flight, ended within the last minute, or ended before a restart (its journaled ending, no
 * events: docs/survival.md). A Run with `disconnect_grace_ms` keeps its call
 * running that long after its caller's stream breaks, for the caller to follow it again; without, the call stops.
 * `max_retries` (SPEC S8, src/server/retries.ts): an attempt whose machine is lost (or, with `retry_on_failure`,
 * whose node failed) is placed again under `<call id>#<k>`; the caller gets Retrying, then the next Started. A Run
 * with the same call id arriving meanwhile follows the current attempt. A Run whose own claim a higher-priority claim
 * preempts (SPEC Q2) tells its caller Preempting; its call is stopped when the grace runs out (ABORTED, or retried).
 */
import * as z from 'zod';
import type { RunRequest, RunResponse } from '../../../generated/ts/berth/v1/placement.js';
import { BerthError } from '../../errors.js';
import { normalizeAsk } from '../../placement/ask.js';
import type { PreemptionNotice } from '../../placement/preempt.js';
import type { Grant } from '../../placement/types.js';
import { toPreempting } from '../convert.js';
import type { CallRecord, Terminal } from '../../workers/call-record.js';
import { callerHold, follow, grantOf } from '../call-follow.js';
import { ENDED_KEPT_MS, type WorkerHub } from '../../workers/hub.js';
import type { Once } from '../../workers/call-ids.js';
import { attemptCallId, checkRetries, machineLost, preempted } from '../retries.js';
import { toTask } from '../../workers/task.js';
import { unjournaled, type Journal } from '../../journal/journal.js';
import type { ServerContext } from '../context.js';
import { serverStream, type CallScope, type Sink } from '../edge.js';
import type { Caller } from '../identity.js';
import { longTimeout } from '../long-timer.js';

const part = (what: string) =>
  z
    .string()
    .min(1, 'required')
    .max(128, 'at most 128 characters')
    .regex(/^[A-Za-z0-9_.-]+$/, `${what} holds only letters, digits and _ . -`);
const idSchema = z.object({ runId: part('a run id'), flow: part('a flow name'), node: part('a node name') });
const SNAKE: Record<string, string> = { runId: 'run_id' };

/** Longest `timeout_ms` a Run may name: 30 days (longer ones would overflow Node's timers). */
export const MAX_TIMEOUT_MS = 2_592_000_000;
/** Longest `disconnect_grace_ms` a Run may name: an hour (SPEC S2). */
export const MAX_DISCONNECT_GRACE_MS = 3_600_000;
/** A follow's call id: `<run_id>:<flow>.<node>`. */
const CALL_ID = /^[A-Za-z0-9_.-]{1,128}:[A-Za-z0-9_.-]{1,128}\.[A-Za-z0-9_.-]{1,128}(#[0-9]{1,2})?$/;
/** Per hub: the call id each call being retried runs its current attempt under (SPEC S8), by the Run's call id. */
const chains = new WeakMap<WorkerHub, Map<string, string>>();
function chainsOf(hub: WorkerHub): Map<string, string> {
  let m = chains.get(hub);
  if (!m) chains.set(hub, (m = new Map()));
  return m;
}

/** Builds the Run handler. */
export function runHandler(ctx: ServerContext) {
  return serverStream<RunRequest, RunResponse>(ctx, 'Run', runCall(ctx));
}

/** What a Run does, for any transport: the request, a sink for its messages, the call's signal, scope and caller. */
export type RunCall = (
  req: RunRequest,
  sink: Sink<RunResponse>,
  signal: AbortSignal,
  scope: CallScope,
  caller: Caller,
) => Promise<void>;

/** Builds one Run's domain function (the Run and RunWhole handlers share it: one set of rules). */
export function runCall(ctx: ServerContext): RunCall {
  return run;

  // SPEC R3: until its call has started, a Run follows the drain (a queued Run-with-ask ends
  // UNAVAILABLE "server is draining"); a started call is kept through the drain and gets the grace.
  async function run(
    req: RunRequest,
    sink: Sink<RunResponse>,
    signal: AbortSignal,
    scope: CallScope,
    caller: Caller,
  ): Promise<void> {
    const owner = caller.scoped ? caller.name : undefined;
    if (req.follow) return followAgain(req.follow, owner, sink, signal, scope);
    const ids = idSchema.safeParse(req);
    if (!ids.success) {
      const key = String(ids.error.issues[0].path[0]);
      throw new BerthError(
        'invalid_argument',
        `${SNAKE[key] ?? key}: ${ids.error.issues[0].message} (got ` +
          `${JSON.stringify((req as unknown as Record<string, unknown>)[key])})`,
      );
    }
    if (!(req.timeoutMs >= 0 && req.timeoutMs <= MAX_TIMEOUT_MS)) {
      throw new BerthError(
        'invalid_argument',
        `timeout_ms: at most ${MAX_TIMEOUT_MS} (30 days), 0 = none (got ${req.timeoutMs})`,
      );
    }
    if (!(req.disconnectGraceMs >= 0 && req.disconnectGraceMs <= MAX_DISCONNECT_GRACE_MS)) {
      throw new BerthError(
        'invalid_argument',
        `disconnect_grace_ms: at most ${MAX_DISCONNECT_GRACE_MS} (an hour), 0 = the server's --worker-hold ` +
          `(got ${req.disconnectGraceMs})`,
      );
    }
    const { runId, flow, node } = ids.data;
    const callId = `${runId}:${flow}.${node}`;
    toTask(callId, undefined, req.payload); // validate the payload before anything is claimed or followed
    const placement = req.placement;
    if (!placement) throw new BerthError('invalid_argument', 'placement: a claim_id or an ask is required');
    const ask = placement.$case === 'ask' ? normalizeAsk(placement.value, 'ask') : undefined;
    const inClaim = placement.$case === 'claimId' ? placement.value : '';
    checkRetries(req);
    const chain = chainsOf(ctx.hub);
    // A Run joining a call being retried follows its current attempt (one call id, one execution, SPEC S8).
    const current = chain.get(callId) ?? callId;
    const joined = ctx.hub.calls.get(current);
    if (joined && !joined.ended && joined.owner !== owner) throw othersCall(callId);
    if (current !== callId) {
      return void (await attempt(current, ctx.hub.ids.once(current, ctx.hub.calls, signal, place(current)), false, {}));
    }

    let placing = ctx.hub.ids.once(callId, ctx.hub.calls, signal, place(callId));
    try {
      for (let n = 1; ; n++) {
        const id = attemptCallId(callId, n);
        const retry = n <= req.maxRetries;
        let reason: string;
        const where = { machine: '' };
        try {
          const end = await attempt(id, placing, retry && req.retryOnFailure, where);
          if (end?.$case !== 'failure' || !retry || !req.retryOnFailure) return;
          reason = `${end.value.type}: ${end.value.message}`;
        } catch (err) {
          if (!retry || signal.aborted || !(machineLost(err) || preempted(err))) throw err;
          reason = err.message;
        }
        const next = attemptCallId(callId, n + 1);
        chain.set(callId, next);
        placing = ctx.hub.ids.once(next, ctx.hub.calls, signal, place(next)); // placed before anything is awaited
        placing.catch(() => {}); // awaited by the next attempt, after Retrying is written
        const { machine } = where;
        ctx.events.emit({
          kind: 'call_retrying',
          callId: next,
          runId,
          machine,
          node: `${flow}.${node}`,
          detail: `${id} on ${machine} ended (${reason}): placed again as ${next}, attempt ${n + 1} of ${
            req.maxRetries + 1
          }`,
        });
        const retrying = { attempt: n + 1, reason, machine, callId: next, previousCallId: id };
        try {
          await sink.write({ kind: { $case: 'retrying', value: retrying } });
        } catch (err) {
          void attempt(next, placing, false, {}).catch(() => {}); // its follow fails at once: stopped and released
          throw err;
        }
      }
    } finally {
      if (chain.get(callId) !== undefined) chain.delete(callId);
    }

    /** Places call `id` for `once`: in the held claim, or claims the ask; then starts it on the claim's machine. */
    function place(id: string): () => Promise<{ rec: CallRecord; grant: Grant }> {
      return async () => {
        let grant: Grant;
        if (!ask) {
          const g = ctx.placer.get(inClaim);
          if (!g || g.ask.owner !== owner)
            throw new BerthError('not_found', `claim_id: no held claim ${JSON.stringify(inClaim)}`);
          grant = g;
        } else {
          const decideStart = performance.now();
          const claimed = ctx.placer.claim(
            { ...ask, node: ask.node || `${flow}.${node}`, runId: ask.runId || runId, owner },
            { signal },
          );
          ctx.metrics?.decided(performance.now() - decideStart);
          grant = await claimed;
        }
        try {
          signal.throwIfAborted(); // e.g. the drain began while it was placed: nothing new starts (SPEC R3)
          const spec = {
            callId: id,
            runId,
            flow,
            node,
            payload: req.payload,
            owner,
            disconnectGraceMs: req.disconnectGraceMs,
          };
          // The claim is durable before its call is sent (SPEC S4), when the call can outlive a crash of this server.
          const journal = ask ? ctx.journal : undefined;
          const ready = journal && ctx.hub.outlivesServer(spec, grant) ? journaled(journal, grant.claimId) : undefined;
          const rec = await ctx.hub.start(spec, grant, signal, ready);
          grantOf.set(rec, grant);
          if (req.disconnectGraceMs > 0) callerHold.set(rec, req.disconnectGraceMs);
          return { rec, grant };
        } catch (err) {
          if (ask) ctx.placer.release(grant.claimId, 'run ended');
          throw err;
        }
      };
    }

    /**
     * One attempt: follows call `id` once `placing` resolved (the call in flight or being placed, or the one this
     * Run placed: then it is run to its end, timed and reported). Resolves with its ending; a Failure is held back
     * from the caller when `holdFailure` (it is retried); `where.machine` is set to the machine it ran on.
     * @throws the attempt's BerthError ("went away", …).
     */
    async function attempt(
      id: string,
      placing: Promise<Once<{ rec: CallRecord; grant: Grant }>>,
      holdFailure: boolean,
      where: { machine?: string },
    ): Promise<Terminal | undefined> {
      let got: Once<{ rec: CallRecord; grant: Grant }>;
      try {
        got = await placing;
      } catch (err) {
        if (machineLost(err)) where.machine = /^worker (\S+)/.exec(err.message)?.[1] ?? '';
        throw err;
      }
      if (!got.placed && got.rec.owner !== owner) throw othersCall(callId);
      scope.keepThroughDrain();
      where.machine = got.rec.machine;
      if (!got.placed) return follow(got.rec, sink, signal, 0, holdFailure);
      const { rec: r, grant } = got.placed;
      where.machine = grant.machine;
      const onLost = () => r.fail(grant.lost.reason as BerthError);
      // the Run's own claim may be preempted (SPEC Q2): its caller hears the notice while the call runs its grace
      const notice =
        ask && ctx.placer.preemption
          ? (n: PreemptionNotice) =>
              void sink.write({ kind: { $case: 'preempting', value: toPreempting(n) } }).catch(() => {})
          : undefined;
      if (notice) ctx.preemptNotices.set(grant.claimId, notice);
      try {
        grant.lost.addEventListener('abort', onLost, { once: true });
        if (grant.lost.aborted) onLost();
        const a = grant.allocation;
        ctx.events.emit({
          kind: 'call_started',
          callId: id,
          runId,
          machine: grant.machine,
          node: `${flow}.${node}`,
          claimId: grant.claimId,
          detail: `${id} on ${grant.machine}`,
          granted: { cpus: a.cpus, gpus: a.gpuIds.length, ramMb: a.ramMb },
          gpuIds: a.gpuIds,
          clamped: grant.clamped,
          fellBack: grant.fellBack,
          runClaim: ask !== undefined,
          ...(req.disconnectGraceMs > 0 ? { callerGraceMs: req.disconnectGraceMs } : {}),
        });
        const clearTimer =
          req.timeoutMs > 0
            ? longTimeout(() => {
                const why = new BerthError(
                  'deadline_exceeded',
                  `call ${id} exceeded its timeout of ${req.timeoutMs} ms`,
                );
                r.stop(why);
                r.fail(why);
              }, req.timeoutMs)
            : undefined;
        const finished = { callId: id, runId, machine: grant.machine, node: `${flow}.${node}`, claimId: grant.claimId };
        const ended = (end: Terminal | undefined) => {
          const failureType = end?.$case === 'failure' ? end.value.type : undefined;
          ctx.events.emit({
            kind: 'call_finished',
            ...finished,
            detail: `${id} finished${failureType ? `: ${failureType}` : ''}`,
            outcome: end?.$case ?? 'result',
            failureType,
            durationMs: Date.now() - r.startedAt,
          });
        };
        const failed = (err: unknown) => {
          const cancelled = err instanceof BerthError && err.kind === 'cancelled';
          ctx.events.emit({
            kind: cancelled ? 'call_cancelled' : 'call_finished',
            ...finished,
            detail: err instanceof Error ? err.message : String(err),
            outcome: cancelled ? 'cancelled' : 'error',
            failureType: err instanceof BerthError ? err.kind : 'error',
            durationMs: Date.now() - r.startedAt,
          });
        };
        // The ending is told to the bus (and so queued in the journal) the moment the call ends, and no follower
        // tells its caller before that commit (SPEC S4): a crash right after the caller got it keeps it followable.
        r.whenEnded((end) => {
          if (end instanceof BerthError) failed(end);
          else ended(end);
          const journal = ctx.journal;
          if (journal) r.endingKept = journal.flushed().catch(() => {}); // a failed write is logged by the journal
        });
        try {
          return await follow(r, sink, signal, 0, holdFailure);
        } finally {
          clearTimer?.();
        }
      } finally {
        grant.lost.removeEventListener('abort', onLost);
        if (notice && ctx.preemptNotices.get(grant.claimId) === notice) ctx.preemptNotices.delete(grant.claimId);
        // A claim this Run placed is given back once the machine is really done with the call (a
        // cancelled process may take its grace; Runs that joined may still follow it).
        if (ask) void r.settled.then(() => ctx.placer.release(grant.claimId, 'run ended'));
      }
    }
  }

  /** RunRequest.follow (SPEC S3): Started, then the call's events after `after_seq`, then its ending. */
  async function followAgain(
    f: { callId: string; afterSeq: number },
    owner: string | undefined,
    sink: Sink<RunResponse>,
    signal: AbortSignal,
    scope: CallScope,
  ): Promise<void> {
    if (typeof f.callId !== 'string' || !CALL_ID.test(f.callId)) {
      throw new BerthError(
        'invalid_argument',
        `follow.call_id: expected <run_id>:<flow>.<node> (got ${JSON.stringify(String(f.callId).slice(0, 400))})`,
      );
    }
    if (!(Number.isSafeInteger(f.afterSeq) && f.afterSeq >= 0)) {
      throw new BerthError('invalid_argument', `follow.after_seq: a sequence number >= 0 (got ${f.afterSeq})`);
    }
    const rec = ctx.hub.followable(f.callId);
    if (!rec || rec.owner !== owner) {
      throw new BerthError(
        'not_found',
        `follow.call_id: no call ${f.callId} in flight, ended within the last ${ENDED_KEPT_MS / 1000} s or journaled`,
      );
    }
    scope.keepThroughDrain();
    ctx.log.debug({ call: f.callId, afterSeq: f.afterSeq }, 'call followed again');
    await follow(rec, sink, signal, f.afterSeq);
  }
}

/**
 * Resolves once claim `claimId`'s grant is journaled; rejects naming the claim when it could not be (UNAVAILABLE,
 * or INVALID_ARGUMENT for a claim too large to journal).
 */
function journaled(journal: Journal, claimId: string): Promise<void> {
  return journal.flushed(claimId).catch((err: unknown) => {
    throw unjournaled(claimId, err);
  });
}

/** Another identity's call under this id (SPEC R7): neither followed nor shown. */
function othersCall(callId: string): BerthError {
  return new BerthError('failed_precondition', `call ${callId} is in flight for another client: use another run_id`);
}
