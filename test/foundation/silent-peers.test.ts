/**
 * Silent peers (SPEC R6, issue 10 item 2): server keepalive pings drop a frozen (SIGSTOPped) client,
 * so its claim is released and its run cancelled; a frozen `berth worker` is detected and its
 * books leave. Short keepalive intervals here (1 s ping, 1 s timeout); with
 * SILENT_PEERS_DEFAULTS=1 the server's defaults (10 s + 5 s, heartbeats 5 s) are used instead, which
 * is how the "Silent peers" figures of docs/guide-serving.md are measured.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import type { WatchEventsResponse } from '../../generated/ts/berth/v1/placement.js';
import { watch } from '../support/claims.js';
import { finished, ROOT, spawnBerth, waitForLine } from '../support/cli.js';
import { startServer, type TestServer } from '../support/server.js';
import { DEFAULT_KEEPALIVE } from '../../src/server/server.js';

const KEEPALIVE = process.env.SILENT_PEERS_DEFAULTS ? DEFAULT_KEEPALIVE : { timeMs: 1000, timeoutMs: 1000 };
const TEST_MS = 60_000; // bounds each scenario, also with the defaults
const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** SIGCONT then SIGKILL `child` (a stopped process must be continued to die promptly) and await its exit. */
function ending(child: ChildProcess): () => Promise<unknown> {
  const exited = new Promise((r) => child.once('exit', r));
  return () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
    return exited;
  };
}

function freeCpus(t: TestServer, machine: string): number | undefined {
  return t.server.context.placer.snapshot().machines.find((m) => m.name === machine)?.free.cpus;
}

describe('silent peers (SPEC R6)', () => {
  it(
    'a SIGSTOPped client holding a claim and a running call is dropped: its claim is released and its run cancelled',
    async () => {
      const t = await startServer({ cpus: 2, keepalive: KEEPALIVE });
      open.push(() => t.close());
      const events = watch(t.placement);
      open.push(() => events.cancel());
      await events.ready;
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/frozen-client.ts', t.address], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      open.push(ending(child));
      await waitForLine(child, /started /);
      expect(freeCpus(t, 'engine')).toBe(0);
      const leaseReleased = events.next((e) => e.kind === 'claim_released' && e.runId === 'frozen-claim');
      const runCancelled = events.next((e) => e.kind === 'call_cancelled' && e.runId === 'frozen-run');
      const runReleased = events.next((e) => e.kind === 'claim_released' && e.runId === 'frozen-run');
      const frozenAt = Date.now();
      child.kill('SIGSTOP');
      const seen: WatchEventsResponse[] = await Promise.all([leaseReleased, runCancelled, runReleased]);
      const tookMs = Date.now() - frozenAt;
      console.log(
        `frozen client dropped after ${tookMs} ms (keepalive ${KEEPALIVE.timeMs} + ${KEEPALIVE.timeoutMs} ms)`,
      );
      expect(seen[2].detail).toBe('run ended');
      // the run's claim came back after its call ended
      expect(Number(seen[2].seq)).toBeGreaterThan(Number(seen[1].seq));
      expect(freeCpus(t, 'engine')).toBe(2);
      expect(child.exitCode).toBeNull(); // it was still frozen: the server, not the client, ended it
    },
    TEST_MS,
  );

  it(
    'a SIGSTOPped `berth worker` is detected: the worker detaches and its books leave',
    async () => {
      const t = await startServer({ cpus: 1, keepalive: KEEPALIVE });
      open.push(() => t.close());
      const events = watch(t.placement);
      open.push(() => events.cancel());
      await events.ready;
      const child = spawnBerth([
        'worker',
        '--server',
        t.address,
        '--name',
        'frozen-w',
        '--cpus',
        '2',
        '--gpus',
        '',
        '--log-level',
        'info',
      ]);
      const done = finished(child);
      open.push(() => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGCONT');
          child.kill('SIGKILL');
        }
        return done;
      });
      await waitForLine(child, /attached to server/);
      expect(freeCpus(t, 'frozen-w')).toBe(2);
      const detached = events.next((e) => e.kind === 'worker_detached' && e.machine === 'frozen-w');
      const frozenAt = Date.now();
      child.kill('SIGSTOP');
      const e = await detached;
      console.log(`frozen worker detached after ${Date.now() - frozenAt} ms: ${e.detail}`);
      expect(freeCpus(t, 'frozen-w')).toBeUndefined();
      expect(child.exitCode).toBeNull();
    },
    TEST_MS,
  );
});
