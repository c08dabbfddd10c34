/**
 * Runs one case of the shared client list (test/cases/clients.json) with the TypeScript BerthClient —
 * the same interpreter test/python/test_cases.py is for the Python clients. Keys of the file are the
 * contract's snake_case names (camelCased here); `timeout` is in seconds.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import * as berth from '../../src/client/index.js';
import type { AskInput, BerthClient, Clamped, Lease, RunInput, RunItem } from '../../src/client/index.js';
import { type CaseServer, fill } from '../support/case-servers.js';
import { until } from '../support/until.js';

type Json = Record<string, unknown>;

const camel = (k: string) => k.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());

/** A case's ask or run arguments for BerthClient: camelCase keys, `timeout` (s) as `timeoutMs`. */
function args<T>(o: Json | undefined): T {
  const out: Json = {};
  for (const [k, v] of Object.entries(o ?? {})) {
    if (k === 'timeout') out.timeoutMs = (v as number) * 1000;
    else out[camel(k)] = v;
  }
  return out as T;
}

/** The client a case connects with (`connect`: token, tls {ca, cert, key}); warnings go to `warnings`. */
export function caseClient(c: Json, s: CaseServer, warnings: Clamped[]): BerthClient {
  const conn = fill((c.connect ?? {}) as { token?: string; tls?: { ca?: string; cert?: string; key?: string } }, {
    certs: s.certs,
  });
  return new berth.BerthClient({
    address: s.address,
    token: conn.token,
    tlsCa: conn.tls?.ca,
    tlsCert: conn.tls?.cert,
    tlsKey: conn.tls?.key,
    onWarning: (w) => warnings.push(w),
  });
}

/** Checks an error against `expect.error` of a case: class, field, label, message, match, remote_type, ... */
export function checkError(err: unknown, want: Json): void {
  const cls = (berth as unknown as Record<string, abstract new (...a: never[]) => unknown>)[want.class as string];
  expect(cls, `no error class ${want.class}`).toBeTypeOf('function');
  expect(err, `expected ${want.class}, got ${String(err)}`).toBeInstanceOf(cls);
  const e = err as Json & { message: string };
  if (want.field !== undefined) expect(e.field).toBe(want.field);
  if (want.label !== undefined) expect(e.label).toBe(want.label);
  if (want.message !== undefined) expect(e.message).toBe(want.message);
  if (want.match !== undefined) expect(e.message).toContain(want.match);
  if (want.remote_type !== undefined) expect(e.remoteType).toBe(want.remote_type);
  if (want.traceback_has !== undefined) expect(e.remoteTraceback).toContain(want.traceback_has);
  if (want.exit_code !== undefined) expect(e.exitCode).toBe(want.exit_code);
}

function checkGrant(lease: Lease, want: Json): void {
  const got: Json = {
    machine: lease.machine,
    remote: lease.remote,
    clamped: lease.clamped,
    fell_back: lease.grant.fellBack,
    cpus: lease.allocation.cpus,
    gpu_ids: lease.allocation.gpuIds,
  };
  for (const [k, v] of Object.entries(want)) {
    if (k === 'env') expect(lease.allocation.env).toMatchObject(v as Json);
    else expect(got[k], k).toEqual(v);
  }
}

/** The fields of a run item as the case file names them. */
function itemFields(i: RunItem): Json {
  if (i.$case === 'started') return { kind: 'started', machine: i.value.machine, call_id: i.value.callId };
  if (i.$case === 'metric') return { kind: 'metric', name: i.value.name, value: i.value.value };
  if (i.$case === 'log') return { kind: 'log', line: i.value.line, stream: i.value.stream };
  return { kind: i.$case };
}

/** Runs `run` (a case's run arguments) with run() or streamRun(); the value and the items before it. */
async function runOnce(
  client: BerthClient,
  run: RunInput,
  via: unknown,
): Promise<{ value: unknown; items: RunItem[] }> {
  const items: RunItem[] = [];
  if (via === 'stream') {
    for await (const i of client.streamRun(run)) {
      if (i.$case === 'result') return { value: i.value.value, items };
      items.push(i);
    }
    throw new Error('stream ended without a result');
  }
  const value = await client.run(run, { onEvent: (i) => items.push(i) });
  return { value, items };
}

async function outcome<T>(p: Promise<T>): Promise<{ ok: T } | { err: unknown }> {
  try {
    return { ok: await p };
  } catch (err) {
    return { err };
  }
}

function checkOutcome(o: { ok: unknown } | { err: unknown }, want: Json): void {
  if (want.error) {
    expect('err' in o, `expected ${JSON.stringify(want.error)}, got ${JSON.stringify(o)}`).toBe(true);
    if ('err' in o) checkError(o.err, want.error as Json);
  } else if ('err' in o) throw o.err;
}

/** Runs case `c` against server `s` and checks what it expects; the books are full afterwards. */
export async function runCase(c: Json, s: CaseServer): Promise<void> {
  const warnings: Clamped[] = [];
  const client = caseClient(c, s, warnings);
  const want = (c.expect ?? {}) as Json;
  try {
    if (c.claim) await claimCase(client, c, want);
    else if (c.run) await runCaseRun(client, c, want);
    else if (c.cancel) await cancelCase(client, c, want, s);
    else if (c.snapshot) {
      const o = await outcome(client.snapshot());
      checkOutcome(o, want);
      if ('ok' in o && want.machine0) expect(o.ok.machines[0]?.name).toBe(want.machine0);
    }
    if (want.warns) expect(warnings.map((w) => w.name)).toContain(want.warns);
    if (!(c.snapshot && want.error)) await booksFull(client, c); // (a refused client cannot look)
  } finally {
    client.close();
  }
}

async function claimCase(client: BerthClient, c: Json, want: Json): Promise<void> {
  const hold = c.while_holding ? await client.claim(args<AskInput>(c.while_holding as Json)) : undefined;
  let queued = '';
  let onQueued: () => void = () => {};
  const wasQueued = new Promise<void>((resolve) => (onQueued = resolve));
  const timeoutMs = c.timeout === undefined ? undefined : (c.timeout as number) * 1000;
  const claim = outcome(
    client.claim(args<AskInput>(c.claim as Json), {
      timeoutMs,
      onQueued: (q) => {
        queued ||= q.detail;
        onQueued();
      },
    }),
  );
  if (hold) {
    await Promise.race([wasQueued, claim]);
    if (c.cancel_when_queued) {
      const counts = await client.cancel(c.cancel_when_queued as string);
      expect(counts).toEqual(want.cancel_counts);
    }
    if (c.release_hold !== 'after') await hold.release();
  }
  const o = await claim;
  if (hold && c.release_hold === 'after') await hold.release();
  if (want.queued_detail) expect(queued).toContain(want.queued_detail);
  checkOutcome(o, want);
  if ('ok' in o) {
    const lease = o.ok;
    try {
      if (want.granted) checkGrant(lease, want.granted as Json);
      expect((await client.snapshot()).held.map((h) => h.claimId)).toContain(lease.claimId);
    } finally {
      await lease.release();
    }
  }
}

async function runCaseRun(client: BerthClient, c: Json, want: Json): Promise<void> {
  const lease = c.in_claim ? await client.claim(args<AskInput>(c.in_claim as Json)) : undefined;
  try {
    if (lease && want.granted) checkGrant(lease, want.granted as Json);
    const run = { ...args<RunInput>(c.run as Json), ...(lease ? { claim: lease } : {}) };
    const o = await outcome(runOnce(client, run, c.via));
    checkOutcome(o, want);
    if ('ok' in o) {
      if ('value' in want) expect(o.ok.value).toEqual(want.value);
      if (want.events) {
        const got = o.ok.items.map(itemFields);
        const wanted = want.events as Json[];
        expect(got.map((g) => g.kind)).toEqual(wanted.map((w) => w.kind));
        for (const [i, w] of wanted.entries()) expect(got[i]).toMatchObject(w);
      }
    }
  } finally {
    await lease?.release();
  }
}

async function cancelCase(client: BerthClient, c: Json, want: Json, s: CaseServer): Promise<void> {
  const spec = c.cancel as { runs: Json[]; cancel: string };
  const release = join(s.scratch, `release-${c.id}`);
  const started = new Set<string>();
  const outcomes = new Map<string, { ok: unknown } | { err: unknown }>();
  const calls = spec.runs.map((r) => {
    const run = args<RunInput>(fill(r, { release }));
    const id = run.runId as string;
    const onEvent = (i: RunItem) => i.$case === 'started' && started.add(id);
    return outcome(client.run(run, { onEvent })).then((o) => void outcomes.set(id, o));
  });
  await until(() => started.size === spec.runs.length, 30_000);
  expect(await client.cancel(spec.cancel)).toEqual(want.cancel_counts);
  await until(() => outcomes.has(spec.cancel), 30_000);
  const others = [...started].filter((id) => id !== spec.cancel);
  expect(
    others.filter((id) => outcomes.has(id)),
    'other runs are untouched',
  ).toEqual([]);
  writeFileSync(release, '');
  await Promise.all(calls);
  for (const [id, w] of Object.entries(want.outcomes as Record<string, Json>)) {
    const o = outcomes.get(id)!;
    checkOutcome(o, w);
    if ('ok' in o && 'value' in w) expect(o.ok).toEqual(w.value);
  }
}

/** Nothing held, waiting or running; every machine's free cores and GPU ids equal its total (SPEC P8). */
async function booksFull(client: BerthClient, c: Json): Promise<void> {
  let last = '';
  await until(async () => {
    const snap = await client.snapshot();
    last = JSON.stringify({ held: snap.held, waiting: snap.waiting, calls: snap.calls, machines: snap.machines });
    if (snap.held.length || snap.waiting.length || snap.calls.length) return false;
    return snap.machines.every(
      (m) => m.free?.cpus === m.total?.cpus && JSON.stringify(m.freeGpuIds) === JSON.stringify(m.total?.gpuIds),
    );
  }, 10_000).catch(() => {
    throw new Error(`${c.id}: the books are not full again: ${last}`);
  });
}
