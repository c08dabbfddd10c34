/**
 * Runs of the TypeScript client that live through a broken stream (issue 19 item 3, SPEC S3), as the Python
 * client's (test/python/test_resume_runs.py): `run()` / `streamRun()` follow the call again by call id from
 * the last event seen — through a `berth serve` SIGKILLed and started again on the same port and state dir
 * (a real `berth worker` keeps the call), and through a cut of the client's link (a TCP proxy on loopback)
 * for a run asking `disconnectGraceMs` — and the caller sees every line once, then the value; the node runs
 * once. An AbortSignal still stops a run whose stream is broken.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BerthClient, Cancelled, InvalidAsk, type RunItem } from '../../src/client/index.js';
import { startBerthWorker } from '../support/berth-worker.js';
import { LinkProxy } from '../support/link-proxy.js';
import { RestartableServer } from '../support/restartable-server.js';
import { startServer } from '../support/server.js';
import { until } from '../support/until.js';

const open: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** A scratch dir, and a command that notes each run in `ran`, prints 1..3, waits for the file `go`, prints 4..6. */
function gated() {
  const dir = mkdtempSync(join(tmpdir(), 'berth-follow-'));
  open.push(() => rmSync(dir, { recursive: true, force: true }));
  const go = join(dir, 'go');
  const ran = join(dir, 'ran');
  const script =
    `echo x >> '${ran}'; for i in 1 2 3; do echo $i; done; ` +
    `while [ ! -f '${go}' ]; do sleep 0.02; done; for i in 4 5 6; do echo $i; done`;
  return { go, ran, command: ['sh', '-c', script] };
}

const lines = (items: RunItem[]) => items.flatMap((i) => (i.$case === 'log' ? [i.value.line] : []));

/** An in-process server (engine host, 2 cpus) and a client dialling it through a cuttable proxy. */
async function behindProxy() {
  const s = await startServer({ cpus: 2 });
  open.push(() => s.close());
  const proxy = new LinkProxy(s.address);
  const client = new BerthClient({ address: await proxy.start() });
  open.push(
    () => proxy.close(),
    () => client.close(),
  );
  return { proxy, client };
}

describe('a streamed run across a server restart', () => {
  it('follows the call on the restarted server: every line once, in order, the result, the node ran once', async () => {
    const srv = new RestartableServer(['--cpus', '1', '--gpus', '']);
    open.push(() => srv.close());
    const address = await srv.start();
    const worker = await startBerthWorker(address, 'w1', ['--labels', 'w', '--cpus', '2', '--gpus', '']);
    open.push(() => worker.stop());
    const client = new BerthClient({ address });
    open.push(() => client.close());
    const { go, ran, command } = gated();
    const items: RunItem[] = [];
    for await (const item of client.streamRun({ command, label: 'w', policy: 'require', runId: 'restart' })) {
      items.push(item);
      if (lines(items).length === 3 && !existsSync(go)) {
        await srv.kill(); // a crash mid-call: the agent keeps the call and its output
        writeFileSync(go, ''); // lines 4..6 come while no server runs
        await srv.start();
      }
    }
    expect(lines(items)).toEqual(['1', '2', '3', '4', '5', '6']);
    expect(items.filter((i) => i.$case === 'started')).toHaveLength(1);
    expect(items.at(-1)).toMatchObject({ $case: 'result', value: { value: { exit_code: 0 } } });
    const seqs = items.flatMap((i) => (i.$case === 'log' ? [i.seq] : []));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b)); // in order (a batch of lines shares its event's seq)
    expect(readFileSync(ran, 'utf8')).toBe('x\n'); // one call id, one execution
  }, 60_000);
});

describe('a run across a cut of the client link', () => {
  it('with disconnectGraceMs is followed again: every line once, then the value', async () => {
    const { proxy, client } = await behindProxy();
    const { go, ran, command } = gated();
    const seen: string[] = [];
    const value = await client.run(
      { command, disconnectGraceMs: 30_000 },
      {
        onEvent: (item) => {
          if (item.$case !== 'log') return;
          seen.push(item.value.line);
          if (seen.length === 3) {
            proxy.cut(); // kept down: the client's attempts are reset meanwhile
            writeFileSync(go, ''); // lines 4..6 are printed while the link is down
            setTimeout(() => proxy.restore(), 1000);
          }
        },
      },
    );
    expect(value).toEqual({ exit_code: 0 });
    expect(seen).toEqual(['1', '2', '3', '4', '5', '6']);
    expect(readFileSync(ran, 'utf8')).toBe('x\n');
  });

  it('without disconnectGraceMs stops the call, as before', async () => {
    const { proxy, client } = await behindProxy();
    const { command } = gated();
    const seen: string[] = [];
    const err = await client
      .run(
        { command },
        {
          onEvent: (item) => {
            if (item.$case !== 'log') return;
            seen.push(item.value.line);
            if (seen.length === 3) {
              proxy.cut();
              setTimeout(() => proxy.restore(), 1000);
            }
          },
        },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Cancelled);
    expect((err as Error).message).toMatch(/cancelled by its caller/);
    expect(seen).toEqual(['1', '2', '3']);
  });

  it('is still cancelled by its AbortSignal while its stream is broken', async () => {
    const { proxy, client } = await behindProxy();
    const { command } = gated();
    const ctl = new AbortController();
    const reason = new Error('stop it');
    const items: RunItem[] = [];
    const done = (async () => {
      for await (const item of client.streamRun({ command, disconnectGraceMs: 30_000 }, { signal: ctl.signal }))
        items.push(item);
    })().catch((e: unknown) => e);
    await until(() => lines(items).length === 3);
    proxy.cut(); // kept down: the client keeps trying to follow the call, for up to 60 s
    await until(() => proxy.refused >= 2); // it is trying
    ctl.abort(reason);
    expect(await done).toBe(reason);
  });
});

describe('disconnectGraceMs', () => {
  it('that protobuf cannot carry or the server would refuse is InvalidAsk naming it, before anything is sent', async () => {
    const client = new BerthClient({ address: '127.0.0.1:1' });
    open.push(() => client.close());
    for (const bad of [-1, 1.5, 3_600_001]) {
      const err = await client.run({ command: ['true'], disconnectGraceMs: bad }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidAsk);
      expect((err as InvalidAsk).field).toBe('disconnect_grace_ms');
    }
  });
});
