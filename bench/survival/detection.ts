/**
 * Survival target (c), issue 19: how fast a call fails when its agent is gone — SIGKILLed and not restarted
 * (expect within the 2 s --worker-hold + 1 s), stopped with SIGTERM (within 1 s: it says it is stopping), or
 * SIGKILLed and started again (within 1 s of the new instance attaching without the call; the Run asks a 60 s
 * hold so that only the restart can fail it). Each measured `reps` times, in ms.
 */
import type { ChildProcess } from 'node:child_process';
import { waitForLine } from '../../test/support/cli.js';
import { run, runRequest } from '../../test/support/run-client.js';
import { until } from '../../test/support/until.js';
import { attached, client, freeAddress, kill, serve, tempDir, worker } from './harness.js';

/** Detection times, ms, per way of losing the agent. */
export interface Detection {
  sigkillMs: number[];
  sigtermMs: number[];
  /** From the restarted agent's "attached to server" log line to the caller's failure (0: the failure came first). */
  restartedMs: number[];
  /** From the SIGKILL of the agent that is then restarted to the caller's failure (the restart's own time in it). */
  restartedFromKillMs: number[];
  /** The failures' messages, one per way. */
  samples: Record<string, string>;
}

/** Runs the three ways `reps` times each against one server. */
export async function detection(reps: number): Promise<Detection> {
  const address = await freeAddress();
  await serve(address, tempDir('state'));
  const c = client(address);
  const state = tempDir('agent');
  const start = () => worker(address, 'w1', ['--cpus', '2', '--gpus', ''], state);
  let agent = start();
  await attached(c, ['w1']);
  const out: Detection = { sigkillMs: [], sigtermMs: [], restartedMs: [], restartedFromKillMs: [], samples: {} };
  let n = 0;
  const call = async (graceMs: number) => {
    const h = run(c, {
      ...runRequest({ label: 'w', runId: `d${++n}`, argv: ['sleep', '120'] }),
      disconnectGraceMs: graceMs,
    });
    await until(() => h.responses.some((r) => r.kind?.$case === 'event' || r.kind?.$case === 'started'), 30_000, 20);
    await new Promise((r) => setTimeout(r, 300)); // the call's process runs
    return h;
  };
  const again = async (): Promise<ChildProcess> => {
    const a = start();
    await attached(c, ['w1']);
    return a;
  };
  for (let i = 0; i < reps; i++) {
    for (const way of ['sigkill', 'sigterm', 'restarted'] as const) {
      const h = await call(way === 'restarted' ? 60_000 : 0);
      const t0 = performance.now();
      await kill(agent, way === 'sigterm' ? 'SIGTERM' : 'SIGKILL');
      let from = t0;
      if (way === 'restarted') {
        agent = start();
        await waitForLine(agent, /attached to server/);
        from = performance.now();
      }
      const o = await h.done;
      const ms = Math.max(0, Math.round(performance.now() - from));
      out[`${way}Ms`].push(ms);
      if (way === 'restarted') out.restartedFromKillMs.push(Math.round(performance.now() - t0));
      out.samples[way] ??= o.error ? `${o.error.code} ${o.error.details}` : 'no failure';
      if (way !== 'restarted') agent = await again();
      else await attached(c, ['w1']);
    }
  }
  c.close();
  return out;
}
