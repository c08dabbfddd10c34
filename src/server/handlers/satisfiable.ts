/**
 * Satisfiable RPC (issue 13): a structured `verdict` — RUNS_NOW, WAITS, WAITS_FOR_PROVISIONER,
 * CLAMPED (with `clamped_to` and the `limiting` dimension) or IMPOSSIBLE (on_oversize fail) —
 * and, kept for compatibility, `wait_for`: the amount a provisioner must start a machine for when
 * the verdict is WAITS_FOR_PROVISIONER, empty otherwise (SPEC P5, P10).
 * A required label no machine carries (none coming back, no provisioner covering it) is IMPOSSIBLE with
 * `limiting` "label" (issue 23 item 7; a Claim of that ask fails FAILED_PRECONDITION naming the label).
 * With `group` set, the whole group is judged as ClaimGroup would judge it now (rule G8): `verdict`, `limiting` (the
 * blocking member's dimension) and `detail` ("members[i].<dimension>: …", empty when it runs now).
 * Errors: INVALID_ARGUMENT naming the field (`members[i].<field>` for a group); UNAVAILABLE "server is draining"
 * while the server drains (no claim is granted then, SPEC R3).
 */
import {
  type SatisfiableRequest,
  type SatisfiableResponse,
  Verdict,
} from '../../../generated/ts/berth/v1/placement.js';
import { normalizeAsk } from '../../placement/ask.js';
import type { VerdictKind } from '../../placement/oversize.js';
import type { ServerContext } from '../context.js';
import { BerthError } from '../../errors.js';
import { toResources } from '../convert.js';
import { unary } from '../edge.js';
import { DRAINING } from '../live-calls.js';
import { groupAsks } from './claim-group.js';

const VERDICTS: Record<VerdictKind, Verdict> = {
  runs_now: Verdict.VERDICT_RUNS_NOW,
  waits: Verdict.VERDICT_WAITS,
  waits_for_provisioner: Verdict.VERDICT_WAITS_FOR_PROVISIONER,
  clamped: Verdict.VERDICT_CLAMPED,
  impossible: Verdict.VERDICT_IMPOSSIBLE,
};

/** Builds the Satisfiable handler. */
export function satisfiableHandler(ctx: ServerContext) {
  return unary<SatisfiableRequest, SatisfiableResponse>(ctx, 'Satisfiable', (req) => {
    if (ctx.live.draining) throw new BerthError('unavailable', DRAINING);
    if (req.group) {
      const { asks, strategy } = groupAsks(req.group, undefined);
      const g = ctx.placer.groupVerdict(asks, strategy);
      return {
        waitFor: '',
        verdict: VERDICTS[g.verdict],
        clampedTo: undefined,
        limiting: g.limiting,
        detail: g.detail,
      };
    }
    const v = ctx.placer.verdict(
      normalizeAsk(
        req.ask ?? { gpus: 0, label: '', policy: 0, node: '', runId: '', env: {}, holdMs: 0, resources: {} },
        'ask',
      ),
    );
    return {
      waitFor: v.waitFor,
      verdict: VERDICTS[v.verdict],
      clampedTo: v.clampedTo && toResources(v.clampedTo),
      limiting: v.limiting,
      detail: '',
    };
  });
}
