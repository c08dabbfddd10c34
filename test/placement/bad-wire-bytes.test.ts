/**
 * Malformed requests that used to pass (issue 24 item 8), sent as raw bytes where the stubs cannot
 * build them: invalid UTF-8 in a string, random bytes as a body, control characters in Cancel's
 * run_id, NaN in kwargs. Each is INVALID_ARGUMENT naming the field, and changes nothing.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { ClaimRequest, type GetSnapshotResponse } from '../../generated/ts/berth/v1/placement.js';
import { ask } from '../support/claims.js';
import { run, runRequest, terminal } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function server(): Promise<TestServer> {
  const s = await startServer({ cpus: 2 });
  open.push(() => s.close());
  return s;
}

const raw = (b: Buffer) => b;

function unaryRaw(s: TestServer, method: string, body: Buffer): Promise<ServiceError | null> {
  return new Promise((resolve) =>
    s.placement.makeUnaryRequest(`/berth.v1.PlacementService/${method}`, raw, raw, body, (e) => resolve(e)),
  );
}

function snapshot(s: TestServer): Promise<GetSnapshotResponse> {
  return new Promise((resolve, reject) => s.placement.getSnapshot({}, (e, r) => (e ? reject(e) : resolve(r))));
}

/** A small deterministic PRNG (mulberry32), so the random bodies are the same on every run. */
function bytes(seed: number, n: number): Buffer {
  let a = seed >>> 0;
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = (t ^ (t >>> 14)) & 0xff;
  }
  return out;
}

describe('invalid UTF-8 in a string field', () => {
  it('a Claim whose node name is not UTF-8 is INVALID_ARGUMENT naming ask.node, and nothing is held', async () => {
    const s = await server();
    const body = Buffer.from(ClaimRequest.encode({ kind: { $case: 'ask', value: ask({ node: 'NODE' }) } }).finish());
    const at = body.indexOf('NODE');
    body.set([0x61, 0xff, 0xfe, 0x62], at); // 0xff never occurs in UTF-8
    const call = s.placement.makeBidiStreamRequest('/berth.v1.PlacementService/Claim', raw, raw);
    const err = await new Promise<ServiceError>((resolve) => {
      call.on('error', resolve);
      call.on('data', () => {});
      call.write(body);
    });
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toBe('ask.node: not valid UTF-8 (a protobuf string must be)');
    const snap = await snapshot(s);
    expect(snap.held).toEqual([]);
    expect(snap.machines[0].free?.cpus).toBe(2);
  });

  it('a node name holding U+FFFD sent as valid UTF-8 is still granted', async () => {
    const s = await server();
    const body = Buffer.from(
      ClaimRequest.encode({ kind: { $case: 'ask', value: ask({ node: 'a\uFFFDb', cpus: 1 }) } }).finish(),
    );
    const call = s.placement.makeBidiStreamRequest('/berth.v1.PlacementService/Claim', raw, raw);
    await new Promise<void>((resolve, reject) => {
      call.on('error', reject);
      call.on('data', () => resolve());
      call.write(body);
    });
    expect((await snapshot(s)).held.map((h) => h.node)).toEqual(['a\uFFFDb']);
    call.cancel();
  });
});

describe('random bytes as a request body', () => {
  it('50 random bodies each to GetSnapshot and Satisfiable are INVALID_ARGUMENT; the server answers after', async () => {
    const s = await server();
    for (const method of ['GetSnapshot', 'Satisfiable']) {
      for (let seed = 1; seed <= 50; seed++) {
        const err = await unaryRaw(s, method, bytes(seed, 8 + (seed % 57)));
        expect(err?.code, `${method} seed ${seed}`).toBe(status.INVALID_ARGUMENT);
        expect(err?.details).toMatch(/^request: undecodable message body \(/);
      }
    }
    // A zero tag, where the generated decoder used to stop silently, and field number 0.
    expect((await unaryRaw(s, 'GetSnapshot', Buffer.from([0x00, 0x01])))?.details).toMatch(/field no 0/);
    expect((await unaryRaw(s, 'Satisfiable', Buffer.from([0x02, 0x00])))?.details).toMatch(/field no 0/);
    expect((await snapshot(s)).machines[0].free?.cpus).toBe(2);
  });

  it('a well-formed body with a field this server does not know is answered (a newer client)', async () => {
    const s = await server();
    expect(await unaryRaw(s, 'GetSnapshot', Buffer.from([0xf8, 0x07, 0x01]))).toBeNull(); // field 127 = 1
  });
});

describe("Cancel's run_id", () => {
  it('control characters are INVALID_ARGUMENT naming run_id; a run id with : is cancelled', async () => {
    const s = await server();
    const cancel = (runId: string) =>
      new Promise<{ err: ServiceError | null; claims?: number }>((resolve) =>
        s.placement.cancel({ runId }, (err, r) => resolve({ err, claims: r?.claims })),
      );
    for (const runId of ['r\x1b[2J', 'a\nb', 'a\u0000', 'tab\there', 'sp ace']) {
      const { err } = await cancel(runId);
      expect(err?.code).toBe(status.INVALID_ARGUMENT);
      expect(err?.details).toBe(
        `run_id: required, at most 128 characters, only letters, digits and _ . : - (got ${JSON.stringify(runId)})`,
      );
    }
    expect(await cancel('sweep:7')).toEqual({ err: null, claims: 0 });
  });
});

describe('NaN in kwargs', () => {
  it('NaN or Infinity anywhere in kwargs is INVALID_ARGUMENT naming the key; nothing starts', async () => {
    const s = await server();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ lr: Number.NaN }, 'source.kwargs.lr: must be a finite number (JSON has no NaN or Infinity) (got NaN)'],
      [{ a: { b: [1, Number.POSITIVE_INFINITY] } }, 'source.kwargs.a.b.1: must be a finite number'],
    ];
    for (const [kwargs, details] of cases) {
      const out = await run(s.placement, runRequest({ cpus: 1, kwargs })).done;
      expect(out.responses).toEqual([]);
      expect(out.error?.code).toBe(status.INVALID_ARGUMENT);
      expect(out.error?.details.startsWith(details)).toBe(true);
    }
    const ok = await run(
      s.placement,
      runRequest({ cpus: 1, kwargs: { lr: 0.5 }, source: 'def process(lr):\n    return lr * 2\n' }),
    ).done;
    expect(terminal(ok)).toEqual({ $case: 'result', value: { callId: 'r1:flow.node', value: 1 } });
  });
});
