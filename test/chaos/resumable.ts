/**
 * Chaos operations that outlive broken links (issue 19, SPEC S2, S3): a Run followed again by call id
 * after its stream broke (a client link cut, a server SIGKILL), checking the caller sees every line
 * once and in order; and a claim with a hold resumed by its token, checking it keeps its machine and
 * GPU ids. Both retry only what a broken link or a restarting server explains, within a budget, each try on the
 * server the Leader (follower.ts) believes leads, told what the last try got (a standby's hint moves it).
 */
import type { ServiceError } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import type { Granted, RunRequest, RunResponse } from '../../generated/ts/berth/v1/placement.js';
import type { Ask } from '../../generated/ts/berth/v1/resources.js';
import { claim, resumeClaim, type ClaimHandle } from '../support/claims.js';
import { outputLines, terminal, type RunOutcome } from '../support/run-client.js';
import type { Leader } from './follower.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * True for an UNAVAILABLE a broken link, a restarting server or a standby (`standby of cluster …`) explains (not
 * "went away", not "lost").
 */
export function brokenLink(err: ServiceError | null): boolean {
  if (!err || err.code !== status.UNAVAILABLE) return false;
  return !/went away|worker \S+ stopping|lost|call stopped|not started/.test(err.details);
}

function runOnce(lead: Leader, req: RunRequest, deadlineMs: number): Promise<RunOutcome> {
  const call = lead.stub().run(req, { deadline: Date.now() + deadlineMs });
  const responses: RunResponse[] = [];
  call.on('data', (r: RunResponse) => responses.push(r));
  return new Promise((resolve) => {
    call.on('error', (e: ServiceError) => {
      lead.saw(e);
      resolve({ responses, error: e });
    });
    call.on('status', (s) => s.code === 0 && resolve({ responses, error: null }));
  });
}

/** What a Run followed through breaks saw: every response of every stream, the last error, how often it followed. */
export interface Followed extends RunOutcome {
  follows: number;
  /** What is wrong with what the caller saw: a line twice, out of order, missing, or a sequence number repeated. */
  problems: string[];
}

/**
 * Runs `req` (a command printing lines 1..`lines`) and, while its stream breaks for a reason brokenLink
 * accepts, follows the call again from the last sequence number seen (a Run again with the same call id
 * when no Started came, which must join, not run twice), for at most `budgetMs`.
 */
export async function runThroughBreaks(
  lead: Leader,
  req: RunRequest,
  lines: number,
  budgetMs: number,
): Promise<Followed> {
  const end = Date.now() + budgetMs;
  const callId = `${req.runId}:${req.flow}.${req.node}`;
  const all: RunResponse[] = [];
  let follows = 0;
  let o = await runOnce(lead, req, budgetMs);
  for (;;) {
    all.push(...o.responses);
    if (terminal(o) || Date.now() > end) break;
    const notFound = o.error?.code === status.NOT_FOUND && follows > 0;
    if (!brokenLink(o.error) && !notFound) break;
    await sleep(300);
    follows++;
    const started = all.some((r) => r.kind?.$case === 'started');
    const seqs = all.flatMap((r) => (r.kind?.$case === 'event' ? [r.kind.value.seq] : []));
    const follow = { callId, afterSeq: seqs.at(-1) ?? 0 };
    o = await runOnce(lead, notFound && !started ? req : { ...req, follow }, Math.max(1000, end - Date.now()));
  }
  const problems: string[] = [];
  const seqs = all.flatMap((r) => (r.kind?.$case === 'event' ? [r.kind.value.seq] : []));
  for (let i = 1; i < seqs.length; i++)
    if (seqs[i] <= seqs[i - 1]) problems.push(`${callId}: event seq ${seqs[i]} after ${seqs[i - 1]}`);
  const seen = outputLines({ responses: all }).map((l) => l.line);
  for (const [i, l] of seen.entries())
    if (l !== String(i + 1)) problems.push(`${callId}: line ${i + 1} is ${JSON.stringify(l)}`);
  const started = all.find((r) => r.kind?.$case === 'started');
  if (o.error?.code === status.NOT_FOUND && started)
    problems.push(`${callId}: started (${JSON.stringify(started.kind?.value)}), then unknown: ${o.error.details}`);
  const t = terminal({ responses: all });
  const exit = t?.$case === 'result' ? (t.value.value as { exit_code?: number } | undefined)?.exit_code : undefined;
  if (exit === 0 && seen.length !== lines) problems.push(`${callId}: exit 0 but ${seen.length}/${lines} lines seen`);
  return { responses: all, error: terminal(o) ? null : o.error, follows, problems: problems.slice(0, 3) };
}

/** What a held claim went through: its grant, resumes, and what a resume got wrong. */
export interface HeldClaim {
  granted?: Granted;
  resumes: number;
  /** A resume that came back on another machine, with other GPU ids, or not marked resumed. */
  mismatch?: string;
  /** The claim was lost (its resume refused, or its stream ended for a reason other than a broken link). */
  lost: boolean;
  error: ServiceError | null;
}

/**
 * Claims `a` with `holdMs` (SPEC S3), keeps it `keepMs` — resuming it with its token each time its
 * stream breaks — then releases it. Resumes are retried while brokenLink explains the refusal, within 20 s.
 */
export async function claimThroughBreaks(
  lead: Leader,
  a: Partial<Ask>,
  holdMs: number,
  keepMs: number,
): Promise<HeldClaim> {
  let c: ClaimHandle = claim(lead.stub(), { ...a, holdMs });
  const out: HeldClaim = { resumes: 0, lost: false, error: null };
  const g = await Promise.race([c.granted.catch(() => undefined), sleep(20_000).then(() => undefined)]);
  if (!g) {
    c.call.cancel();
    out.error = await c.ended;
    return out;
  }
  out.granted = g;
  const until = Date.now() + keepMs;
  while (Date.now() < until) {
    const err = await Promise.race([c.ended, sleep(until - Date.now()).then(() => 'kept' as const)]);
    if (err === 'kept') break;
    lead.saw(err);
    if (!brokenLink(err)) return { ...out, lost: true, error: err };
    const retryEnd = Date.now() + 20_000;
    for (;;) {
      await sleep(200);
      c = resumeClaim(lead.stub(), g.claimId, g.resumeToken);
      const r = await c.granted.catch(() => undefined);
      if (r) {
        out.resumes++;
        const same = r.resumed && r.machine === g.machine;
        const ids = (x: Granted) => JSON.stringify(x.allocation?.gpuIds ?? []);
        if (!same || ids(r) !== ids(g))
          out.mismatch ??= `${g.claimId}: granted ${g.machine} ${ids(g)}, resumed=${r.resumed} ${r.machine} ${ids(r)}`;
        break;
      }
      const e = await c.ended;
      lead.saw(e);
      if (!brokenLink(e) || Date.now() > retryEnd) return { ...out, lost: true, error: e };
    }
  }
  c.call.write({ kind: { $case: 'release', value: {} } });
  c.call.end();
  out.error = await c.ended;
  return out;
}
