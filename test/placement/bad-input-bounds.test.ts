/**
 * Bad input is a clear error, never a crash, a hang or a broken server (SPEC R1, R8; issue 10
 * items 7 and 9): the allocation's env wins over an ask's; timeouts, NUL bytes, env names and
 * sizes are bounded; undecodable bodies are INVALID_ARGUMENT; `berth status` never prints control
 * characters raw; a worker's bad metric fails only its call.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { GetSnapshotResponse, type RunRequest } from '../../generated/ts/berth/v1/placement.js';
import { renderStatus } from '../../src/cli/render-status.js';
import { claim, fakeWorker } from '../support/claims.js';
import { runBerth } from '../support/cli.js';
import { run, runRequest, terminal } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function server(cpus = 2): Promise<TestServer> {
  const s = await startServer({ cpus, gpuIds: [0] });
  open.push(() => s.close());
  return s;
}

function snapshot(s: TestServer): Promise<GetSnapshotResponse> {
  return new Promise((resolve, reject) => s.placement.getSnapshot({}, (e, r) => (e ? reject(e) : resolve(r))));
}

/** A command Run on the engine with `command` fields overridden. */
function commandRun(o: {
  argv?: string[];
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
}): RunRequest {
  const req = runRequest({ cpus: 1, argv: o.argv ?? ['true'], timeoutMs: o.timeoutMs });
  if (req.payload?.$case === 'command')
    req.payload.value = { argv: o.argv ?? ['true'], env: o.env ?? {}, cwd: o.cwd ?? '' };
  return req;
}

async function refused(s: TestServer, req: RunRequest): Promise<ServiceError> {
  const o = await run(s.placement, req).done;
  expect(o.responses).toEqual([]);
  return o.error!;
}

describe('the allocation env wins (SPEC R8)', () => {
  it('an ask setting CUDA_VISIBLE_DEVICES is INVALID_ARGUMENT naming it, and nothing is granted', async () => {
    const s = await server();
    const c = claim(s.placement, { gpus: 1, cpus: 1, env: { CUDA_VISIBLE_DEVICES: '0,1,2,3' } });
    const err = await c.ended;
    expect(err?.code).toBe(status.INVALID_ARGUMENT);
    expect(err?.details).toBe(
      'ask.env.CUDA_VISIBLE_DEVICES: CUDA_VISIBLE_DEVICES is set by berth from the allocation (SPEC R8): ' +
        'an ask cannot set it (got "0,1,2,3")',
    );
    expect((await snapshot(s)).held).toEqual([]);
  });

  it(
    'OMP_NUM_THREADS in a Run ask or in the command env is refused ' + 'the same way; XLA_FLAGS reaches the node',
    async () => {
      const s = await server();
      const req = runRequest({ cpus: 1, argv: ['true'] });
      if (req.placement?.$case === 'ask') req.placement.value.env = { OMP_NUM_THREADS: '64' };
      expect((await refused(s, req)).details).toMatch(/^ask\.env\.OMP_NUM_THREADS: OMP_NUM_THREADS is set by berth/);
      expect((await refused(s, commandRun({ env: { CUDA_VISIBLE_DEVICES: '0,1' } }))).details).toBe(
        'command.env.CUDA_VISIBLE_DEVICES: is set by berth from the allocation (SPEC R8): ' +
          'a command cannot set it (got "CUDA_VISIBLE_DEVICES")',
      );
      const ok = runRequest({
        cpus: 1,
        gpus: 1,
        source: 'import os\ndef process():\n    return [os.environ["CUDA_VISIBLE_DEVICES"], os.environ["XLA_FLAGS"]]\n',
      });
      if (ok.placement?.$case === 'ask') ok.placement.value.env = { XLA_FLAGS: '--x' };
      const out = await run(s.placement, ok).done;
      expect(terminal(out)).toEqual({ $case: 'result', value: { callId: 'r1:flow.node', value: ['0', '--x'] } });
    },
  );
});

describe('bounds on a Run', () => {
  it('timeout_ms past 30 days is INVALID_ARGUMENT; 2^31 ms and 30 days exactly run the call to its end', async () => {
    const s = await server();
    const err = await refused(s, commandRun({ timeoutMs: 2_592_000_001 }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toBe('timeout_ms: at most 2592000000 (30 days), 0 = none (got 2592000001)');
    for (const timeoutMs of [2 ** 31, 2_592_000_000]) {
      // The command outlives a timer that would fire at once (Node's limit is 2^31-1 ms).
      const out = await run(s.placement, commandRun({ argv: ['sh', '-c', 'sleep 0.3; echo ran'], timeoutMs })).done;
      expect(out.error).toBeNull();
      expect(terminal(out)?.$case).toBe('result');
    }
  });

  it(
    'a NUL byte in argv, an env name or value, or cwd, and = in an env name, ' +
      'are INVALID_ARGUMENT naming the field',
    async () => {
      const s = await server();
      const cases: Array<[Parameters<typeof commandRun>[0], string]> = [
        [{ argv: ['echo', 'a\0b'] }, 'command.argv.1: an argument may not contain a NUL byte (got "a\\u0000b")'],
        [{ env: { 'A\0': 'x' } }, 'command.env.A\0: a variable name may not contain a NUL byte'],
        [{ env: { A: 'x\0y' } }, 'command.env.A: a value may not contain a NUL byte (got "x\\u0000y")'],
        [{ env: { 'A=B': 'x' } }, 'command.env.A=B: a variable name may not be empty or contain = (got "A=B")'],
        [{ cwd: '/tmp\0x' }, 'command.cwd: cwd may not contain a NUL byte (got "/tmp\\u0000x")'],
      ];
      for (const [o, details] of cases) {
        const err = await refused(s, commandRun(o));
        expect(err.code).toBe(status.INVALID_ARGUMENT);
        expect(err.details.startsWith(details)).toBe(true);
      }
      const snap = await snapshot(s);
      expect(snap.held).toEqual([]);
      expect(snap.machines[0].free?.cpus).toBe(2);
    },
  );

  it('an ask env of 5 MB is refused, so GetSnapshot and berth status keep working', async () => {
    const s = await server();
    const many = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`K${i}`, 'x'.repeat(25_000)]));
    const c = claim(s.placement, { cpus: 1, env: many });
    const err = await c.ended;
    expect(err?.code).toBe(status.INVALID_ARGUMENT);
    expect(err?.details).toBe('ask.env: at most 128 variables (got "200 variables, 5000690 bytes")');
    const big = claim(s.placement, { cpus: 1, env: { A: 'x'.repeat(40_000), B: 'y'.repeat(40_000) } });
    expect((await big.ended)?.details).toBe(
      'ask.env: at most 65536 bytes of names and values in all (got "2 variables, 80002 bytes")',
    );
    // The largest env allowed, held: the snapshot stays small and `berth status` prints it.
    const held = claim(s.placement, { cpus: 1, env: { A: 'x'.repeat(65_000) } });
    await held.granted;
    expect(JSON.stringify(await snapshot(s)).length).toBeLessThan(100_000);
    expect((await runBerth(['status', '--server', s.address])).code).toBe(0);
    await held.release();
  });

  it('an undecodable request body is INVALID_ARGUMENT, not INTERNAL', async () => {
    const s = await server();
    const err = await new Promise<ServiceError>((resolve) => {
      // CancelRequest bytes: field 1 (run_id) says 5 bytes follow, but only 1 does.
      s.placement.makeUnaryRequest(
        '/berth.v1.PlacementService/Cancel',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from([0x0a, 0x05, 0x61]),
        (e) => resolve(e!),
      );
    });
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/^request: undecodable message body \(/);
  });
});

describe('control characters in names', () => {
  it('a node name with terminal escapes is INVALID_ARGUMENT naming ask.node, and nothing is granted', async () => {
    const s = await server();
    const c = claim(s.placement, { cpus: 1, node: 'evil\x1b[2J\x1b[Hname\r\nforged line' });
    const err = await c.ended;
    expect(err?.code).toBe(status.INVALID_ARGUMENT);
    expect(err?.details).toMatch(/^ask\.node: no control characters \(got "evil\\u001b\[2J/);
    expect((await snapshot(s)).held).toEqual([]);
  });

  it('berth status prints names escaped, never raw, whatever a server sends', () => {
    const snap = GetSnapshotResponse.fromPartial({
      held: [{ claimId: 'c-1', node: 'evil\x1b[2J\x1b[Hname\r\nforged line', runId: 'r', machine: 'engine' }],
    });
    const out = renderStatus(snap);
    expect(out).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f]/); // nothing but newlines
    expect(out).toContain('evil\\x1b[2J\\x1b[Hname\\x0d\\x0aforged line');
  });
});

describe("a worker's bad metric", () => {
  it(
    'fails only its call (WorkerError naming the field); ' + 'the worker stays attached and runs the next call',
    async () => {
      const s = await server(0);
      const w = fakeWorker(s.worker, 'w1', { cpus: 2 }, ['w']);
      open.push(() => w.close());
      await w.welcomed;
      const nthCall = async (n: number) => {
        for (;;) {
          const calls = w.frames.filter((f) => f.frame?.$case === 'call');
          if (calls.length >= n)
            return calls[n - 1].frame!.$case === 'call'
              ? (calls[n - 1].frame as { value: { callId: string } }).value.callId
              : '';
          await new Promise<void>((r) => w.call.once('data', () => r()));
        }
      };
      const first = run(s.placement, runRequest({ label: 'w', node: 'a' }));
      const id = await nthCall(1);
      w.call.write({
        frame: {
          $case: 'event',
          value: { callId: id, kind: { $case: 'metric', value: { name: 'loss', value: NaN } }, seq: 0 },
        },
      });
      const out = await first.done;
      expect(out.error).toBeNull();
      expect(terminal(out)).toEqual({
        $case: 'failure',
        value: {
          callId: id,
          type: 'WorkerError',
          traceback: '',
          message:
            `worker w1 sent a bad event frame for call ${id}: event.kind.value.value: ` +
            `must be a finite number (got null)`,
        },
      });
      // The worker is told to stop that call, and answers as a worker would.
      await new Promise<void>((r) =>
        w.frames.some((f) => f.frame?.$case === 'cancel')
          ? r()
          : w.call.on('data', (f) => f.frame?.$case === 'cancel' && r()),
      );
      w.call.write({
        frame: { $case: 'failure', value: { callId: id, type: 'Cancelled', message: 'cancelled', traceback: '' } },
      });

      const second = run(s.placement, runRequest({ label: 'w', node: 'b' }));
      const id2 = await nthCall(2);
      w.call.write({ frame: { $case: 'result', value: { callId: id2, value: 7 } } });
      expect(terminal(await second.done)).toEqual({ $case: 'result', value: { callId: id2, value: 7 } });
      expect(s.server.context.hub.workers.has('w1')).toBe(true);
    },
  );
});
