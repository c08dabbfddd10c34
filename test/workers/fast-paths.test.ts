/**
 * Fast paths (issue 11), through the real `berth serve` and `berth worker` processes:
 * warm pools grow with concurrent callers and shrink after the idle timeout (GetSnapshot says so);
 * batched output lines arrive complete and in order with metrics and stderr interleaved, on the
 * engine host and through a worker; a caller that stops reading pauses the node (no runaway memory).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { credentials, type ClientReadableStream } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  PlacementServiceClient,
  type GetSnapshotResponse,
  type RunResponse,
} from '../../generated/ts/berth/v1/placement.js';
import { spawnBerth, waitForLine } from '../support/cli.js';
import { outputLines, run, runRequest, terminal } from '../support/run-client.js';
import { snapshot } from '../support/snapshot.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  child.kill('SIGTERM');
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** A real `berth serve` (8 cores, no GPU) and, with `worker`, a real `berth worker` labelled `remote`. */
async function berth(env: Record<string, string> = {}, worker = false) {
  const server = spawnBerth(['serve', '--listen', '127.0.0.1:0', '--cpus', '8', '--gpus', '', '--grace', '1'], env);
  open.push(() => stopped(server));
  const address = (JSON.parse(await waitForLine(server, /berth serving/)) as { address: string }).address;
  if (worker) {
    const agent = spawnBerth(
      [
        'worker',
        '--server',
        address,
        '--name',
        'w1',
        '--labels',
        'remote',
        '--cpus',
        '8',
        '--gpus',
        '',
        '--grace',
        '1',
      ],
      env,
    );
    open.push(() => stopped(agent));
    await waitForLine(agent, /attached to server/);
  }
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  open.push(() => client.close());
  return client;
}

/** Polls `read` every 50 ms until `done` holds (at most `ms`), returning the last value. */
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('warm pools sized by demand', () => {
  it('8 concurrent callers: the engine keeps 8 interpreters, a second wave reuses them all, ' +
    'then idle ones are retired', async () => {
    const dir = mkdtempSync(join(os.tmpdir(), 'berth-pools-'));
    open.push(() => rmSync(dir, { recursive: true, force: true }));
    const c = await berth({ BERTH_POOL_IDLE_MS: '1500' });
    // each node waits until all 8 of its wave are running: 8 at once, for sure
    const barrier = (wave: number) =>
      `import os, time\ndef process(i):\n    d = ${JSON.stringify(dir)} + "/w${wave}"\n` +
      '    os.makedirs(d, exist_ok=True)\n    open(d + "/" + str(i), "w").close()\n' +
      '    while len(os.listdir(d)) < 8:\n        time.sleep(0.01)\n    return os.getpid()\n';
    const wave = async (w: number) => {
      const outs = await Promise.all(
        Array.from(
          { length: 8 },
          (_, i) =>
            run(c, runRequest({ runId: `w${w}`, node: `n${i}`, cpus: 1, source: barrier(w), kwargs: { i } })).done,
        ),
      );
      for (const o of outs) expect(o.error).toBeNull();
      return outs.map((o) => (terminal(o)!.value as { value: number }).value);
    };
    const first = await wave(1);
    const engine = (s: GetSnapshotResponse) => s.machines.find((m) => m.name === 'engine')!.warmPools!;
    const grown = engine(await snapshot(c));
    expect(grown).toMatchObject({ pools: 1, idle: 8, busy: 0, misses: 8, hits: 0 });
    const second = await wave(2);
    expect(new Set(second)).toEqual(new Set(first)); // the same 8 interpreters: none started, none thrown away
    expect(engine(await snapshot(c))).toMatchObject({ idle: 8, misses: 8, hits: 8 });
    const shrunk = engine(
      await until(
        () => snapshot(c),
        (s) => engine(s).pools === 0,
      ),
    );
    expect(shrunk).toMatchObject({ pools: 0, idle: 0, busy: 0, retired: 8 });
  }, 60_000);
});

/** What a node printing `n` lines to stdout, a stderr line every 1000 and a metric every 2500 makes a caller see. */
const CHATTY = (n: number) =>
  `import sys\ndef process():\n    for i in range(${n}):\n        print(i)\n` +
  '        if i % 1000 == 999:\n            print("err", i, file=sys.stderr)\n' +
  '        if i % 2500 == 2499:\n            report("progress", i)\n    return "done"\n';

function expected(n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    out.push(`stdout:${i}`);
    if (i % 1000 === 999) out.push(`stderr:err ${i}`);
    if (i % 2500 === 2499) out.push(`metric:${i}`);
  }
  return out;
}

function seen(responses: RunResponse[]): string[] {
  return responses.flatMap((r) => {
    const k = r.kind?.$case === 'event' ? r.kind.value.kind : undefined;
    if (k?.$case === 'metric') return [`metric:${k.value.value}`];
    return outputLines({ responses: [r] }).map((l) => `${l.stream}:${l.line}`);
  });
}

describe('batched output', () => {
  it.each([
    ['the engine host', ''],
    ['a remote worker', 'remote'],
  ])(
    'on %s: 20,000 lines, stderr and metrics arrive complete, in order, mostly batched',
    async (_where, label) => {
      const c = await berth({}, label !== '');
      const o = await run(c, runRequest({ label, source: CHATTY(20_000) })).done;
      expect(o.error).toBeNull();
      expect(seen(o.responses)).toEqual(expected(20_000));
      expect(terminal(o)).toMatchObject({ $case: 'result', value: { value: 'done' } });
      const events = o.responses.filter((r) => r.kind?.$case === 'event').length;
      expect(events).toBeLessThan(20_000 / 10); // lines travel in batches, not one message each
    },
    60_000,
  );
});

describe('backpressure end to end', () => {
  it.each([
    ['the engine host', ''],
    ['a remote worker', 'remote'],
  ])(
    'on %s: a caller that stops reading pauses the node; reading again gets every line in order',
    async (_where, label) => {
      const dir = mkdtempSync(join(os.tmpdir(), 'berth-bp-'));
      open.push(() => rmSync(dir, { recursive: true, force: true }));
      const progress = join(dir, 'progress');
      const N = 500_000; // far more than every buffer on the way holds (about 100 000 short lines through a worker)
      const c = await berth({}, label !== '');
      const source =
        `def process():\n    for i in range(${N}):\n        print(i)\n        if i % 100 == 0:\n` +
        `            with open(${JSON.stringify(progress)}, "w") as f:\n                f.write(str(i))\n` +
        `    return "done"\n`;
      const call: ClientReadableStream<RunResponse> = c.run(runRequest({ label, source, runId: `bp${label}` }));
      let next = 0;
      let inOrder = true;
      let slowed = false;
      call.on('data', (r: RunResponse) => {
        for (const l of outputLines({ responses: [r] })) {
          if (l.line !== String(next)) inOrder = false;
          next++;
        }
        if (!slowed) {
          slowed = true;
          call.pause(); // a slow reader: stops after its first message
        }
      });
      call.on('error', () => undefined); // the status below carries the code
      const ended = new Promise<number>((resolve) => call.on('status', (s) => resolve(s.code)));
      const printed = () => Promise.resolve(Number(readFileSync(progress, { encoding: 'utf8', flag: 'a+' }) || 0));
      // the node stalls: once it has printed, its progress stops moving for a second, well short of the end
      let last = -1;
      let still = 0;
      const stall = await until(
        async () => {
          const p = await printed();
          still = p > 0 && p === last ? still + 1 : 0;
          last = p;
          return still;
        },
        (n) => n >= 20,
        60_000,
      );
      expect(stall).toBeGreaterThanOrEqual(20);
      expect(last).toBeGreaterThan(0);
      expect(last, `the node printed ${last} lines before it stalled`).toBeLessThan(N / 2);
      call.resume();
      expect(await ended).toBe(0);
      expect(inOrder).toBe(true);
      expect(next).toBe(N);
    },
    120_000,
  );
});
