/**
 * Survival target (a), issue 19: a long call printing numbered lines on a worker whose link to the server is
 * cut (a TCP proxy resets every connection and refuses new ones) — with `disconnect_grace_ms` 5 min it must
 * survive cuts of the given lengths (exit 0, every line once, in order); with the defaults (2 s --worker-hold) a
 * 1 s cut must cost nothing and a cut past 2 s must fail the call, the time from cut to failure measured.
 */
import type { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { LinkProxy } from '../../test/support/link-proxy.js';
import { outputLines, run, runRequest, terminal } from '../../test/support/run-client.js';
import { until } from '../../test/support/until.js';
import { attached, client, freeAddress, serve, tempDir, worker } from './harness.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const LINES_PER_S = 333; // 100,000 lines in 300 s

/** A command printing lines 1..seconds×LINES_PER_S, LINES_PER_S a second. */
function numbered(seconds: number): string[] {
  const l = LINES_PER_S;
  return ['sh', '-c', `for s in $(seq 0 ${seconds - 1}); do seq $((s*${l}+1)) $((s*${l}+${l})); sleep 1; done`];
}

/** What one call saw. */
export interface CutCall {
  cutsS: number[];
  exitCode: number | null;
  linesExpected: number;
  linesSeen: number;
  /** Every line exactly once, in order. */
  exact: boolean;
  failure?: string;
  /** From the cut to the caller's failure, ms (for a cut past the hold). */
  failedAfterMs?: number;
  wallMs: number;
}

async function setup(): Promise<{ c: PlacementServiceClient; link: LinkProxy }> {
  const address = await freeAddress();
  await serve(address, tempDir('state'));
  const link = new LinkProxy(address);
  worker(await link.start(), 'w1', ['--cpus', '2', '--gpus', '', '--disconnect-grace', '400']);
  const c = client(address);
  await attached(c, ['w1']);
  return { c, link };
}

/** One call of `seconds` with `graceMs`, its link cut for each of `cutsS` (3 s apart, the first 3 s in). */
async function cutCall(
  c: PlacementServiceClient,
  link: LinkProxy,
  seconds: number,
  graceMs: number,
  cutsS: number[],
  id: string,
): Promise<CutCall> {
  const t0 = performance.now();
  const h = run(c, { ...runRequest({ label: 'w', runId: id, argv: numbered(seconds) }), disconnectGraceMs: graceMs });
  await until(() => outputLines(h).length > 0, 60_000, 50);
  let cutAt = 0;
  for (const s of cutsS) {
    await sleep(3000);
    link.cut();
    cutAt = performance.now();
    await Promise.race([sleep(s * 1000), h.done]);
    link.restore();
  }
  const o = await h.done;
  const lines = outputLines(o).map((l) => l.line);
  const want = seconds * LINES_PER_S;
  const t = terminal(o);
  const exit = t?.$case === 'result' ? (t.value.value as { exit_code?: number }).exit_code : undefined;
  return {
    cutsS,
    exitCode: exit ?? null,
    linesExpected: want,
    linesSeen: lines.length,
    exact: lines.length === want && lines.every((l, i) => l === String(i + 1)),
    failure: o.error ? `${o.error.code} ${o.error.details}` : undefined,
    failedAfterMs: o.error ? Math.round(performance.now() - cutAt) : undefined,
    wallMs: Math.round(performance.now() - t0),
  };
}

/** The cuts target: a long call with a 5 min grace through `cutsS`; then a 1 s and a 4 s cut with the defaults. */
export async function linkCuts(callS: number, cutsS: number[]): Promise<CutCall[]> {
  const { c, link } = await setup();
  const out: CutCall[] = [];
  out.push(await cutCall(c, link, callS, 300_000, cutsS, 'long'));
  out.push(await cutCall(c, link, 8, 0, [1], 'blip'));
  out.push(await cutCall(c, link, 12, 0, [6], 'past-hold'));
  c.close();
  await link.close();
  return out;
}
