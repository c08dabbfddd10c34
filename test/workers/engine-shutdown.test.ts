/**
 * Shutdown leaves no engine-host process behind (issue #2 finding 1): a command placed on the
 * engine host that ignores SIGTERM is SIGKILLed after the grace, and the server is only stopped
 * once its process group is gone — through `stop()` and through `berth serve` + signals, for calls run in-process
 * (`--engine-keeper off`; the keeper's: test/journal/engine-calls-survive-restart.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { credentials } from '@grpc/grpc-js';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
import { run, runRequest, type RunHandle, outputLines } from '../support/run-client.js';
import { startServer } from '../support/server.js';
import { groupLives } from '../support/process-groups.js';

const TERM_IGNORING = ['sh', '-c', 'trap "" TERM; echo $$; sleep 340'];
const open: Array<() => Promise<void> | void> = [];
const pgids: number[] = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
  for (const g of pgids.splice(0)) if (groupLives(g)) process.kill(-g, 'SIGKILL'); // never leave one behind
});

/** The pgid the command printed (`echo $$` of its detached shell). */
async function printedPgid(r: RunHandle): Promise<number> {
  const end = Date.now() + 15_000;
  for (;;) {
    const first = outputLines(r)[0];
    if (first !== undefined) {
      const pgid = Number(first.line);
      pgids.push(pgid);
      return pgid;
    }
    if (Date.now() > end) throw new Error('the command printed nothing');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('shutdown with engine-host calls running', () => {
  it(
    'stop() SIGKILLs a TERM-ignoring engine-host command after the grace and resolves only once its ' + 'group is gone',
    async () => {
      const s = await startServer({ cpus: 2, flags: { grace: 0.5 } }); // executor grace 500 ms
      open.push(() => s.close());
      const r = run(s.placement, runRequest({ runId: 'rs', argv: TERM_IGNORING }));
      const pgid = await printedPgid(r);
      expect(groupLives(pgid)).toBe(true);
      const t0 = Date.now();
      await s.server.stop(300); // drain grace 300 ms, then SIGTERM, SIGKILL 500 ms later
      const took = Date.now() - t0;
      expect(groupLives(pgid)).toBe(false);
      expect(took).toBeGreaterThanOrEqual(700); // the command got the drain grace and the kill grace
      expect(took).toBeLessThan(300 + 500 + 3000 + 2000); // bounded: grace + kill grace + margins
      expect((await r.done).error).not.toBeNull();
    },
  );

  it('berth serve: SIGTERM waits for the grace then kills the group; exit 0 with nothing left running', async () => {
    // in-process engine-host calls (the engine keeper's outlive a plain stop: engine-calls-survive-restart.test.ts)
    const child = spawnBerth([
      ...['serve', '--listen', '127.0.0.1:0', '--cpus', '2', '--gpus', '', '--grace', '0.5'],
      ...['--engine-keeper', 'off'],
    ]);
    const done = finished(child);
    open.push(() => void child.kill('SIGKILL'));
    const line = await waitForLine(child, /berth serving/);
    const address = /"address":"([^"]+)"/.exec(line)?.[1] ?? /(127\.0\.0\.1:\d+)/.exec(line)?.[1];
    const client = new PlacementServiceClient(address!, credentials.createInsecure());
    open.push(() => client.close());
    const r = run(client, runRequest({ runId: 'rs', argv: TERM_IGNORING }));
    const pgid = await printedPgid(r);
    child.kill('SIGTERM');
    const res = await done;
    expect(res.code).toBe(0);
    expect(groupLives(pgid)).toBe(false);
  });

  it('berth serve: a second signal SIGKILLs the group at once before exiting 130', async () => {
    const child = spawnBerth([
      ...['serve', '--listen', '127.0.0.1:0', '--cpus', '2', '--gpus', '', '--grace', '30'],
      ...['--engine-keeper', 'off'],
    ]);
    const done = finished(child);
    open.push(() => void child.kill('SIGKILL'));
    const line = await waitForLine(child, /berth serving/);
    const address = /(127\.0\.0\.1:\d+)/.exec(line)?.[1];
    const client = new PlacementServiceClient(address!, credentials.createInsecure());
    open.push(() => client.close());
    const r = run(client, runRequest({ runId: 'rs', argv: TERM_IGNORING }));
    const pgid = await printedPgid(r);
    child.kill('SIGTERM');
    await waitForLine(child, /berth stopping/); // SPEC S5: the control plane stops; the engine-host call is ended
    child.kill('SIGTERM');
    const res = await done;
    expect(res.code).toBe(130);
    const end = Date.now() + 5000;
    while (groupLives(pgid) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(groupLives(pgid)).toBe(false);
  });
});
