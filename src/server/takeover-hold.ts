/**
 * No mass expiry after a takeover (SPEC S7, issue 20 item 5): the new leader holds the workers its store knows for
 * --restart-hold, as a restart does; if when that runs out more than half of them are still missing — the network
 * between them and the new leader is likelier at fault than all those machines — it holds the missing ones (and
 * their calls) for another --restart-hold instead of failing their calls, says so in a decision log line, and
 * looks again then. Once at most half are missing, the holds run out as after a restart.
 */
import type { Logger } from '../log/logger.js';
import type { Placer } from '../placement/placer.js';
import type { WorkerHub } from '../workers/hub.js';

/** Checked this long before the hold runs out, in ms (the placer's and the calls' timers fire at the end). */
const AHEAD_MS = 500;

/**
 * Watches the restored workers `names`, held for `holdMs` from now; returns the function that stops watching.
 * The hold's reason (shown with the machine, and in a failure should it end) names how many are missing.
 */
export function holdWhileMostMissing(
  names: string[],
  holdMs: number,
  deps: { hub: WorkerHub; placer: Placer; log: Logger },
): () => void {
  const { hub, placer, log } = deps;
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    const missing = names.filter((n) => placer.machines.get(n)?.hold);
    if (missing.length * 2 <= names.length) return; // most are back: the holds run out as after a restart
    const why =
      `held after a takeover: ${missing.length} of ${names.length} known workers are still missing, ` +
      'more than half, so none is given up yet';
    const until = Date.now() + AHEAD_MS + holdMs;
    for (const n of missing) hub.extendHold(n, until, why);
    log.info(
      { event: 'takeover_holding', missing: missing.length, known: names.length, holdMs },
      `${missing.length} of ${names.length} workers missing after the takeover: holding them ${holdMs} ms more`,
    );
    timer = setTimeout(check, holdMs).unref();
  };
  if (names.length) timer = setTimeout(check, Math.max(0, holdMs - AHEAD_MS)).unref();
  return () => clearTimeout(timer);
}
