/**
 * History (SPEC S9, issue 19 item 9) through the real server: finished calls and ended claims are listed newest
 * first with filters (run id, state, machine, kind, time), survive a server restart on the same state directory
 * (the journal; also a SIGKILL of `berth serve`), are in memory only with `--journal off`, and `berth history`
 * prints them.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { HistoryRequest, HistoryResponse } from '../../generated/ts/berth/v1/history.js';
import { claim } from '../support/claims.js';
import { credentials } from '@grpc/grpc-js';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { runBerth, spawnBerth, waitForLine } from '../support/cli.js';
import { run, runRequest } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';

const open: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

function history(client: PlacementServiceClient, f: Partial<HistoryRequest> = {}): Promise<HistoryResponse> {
  const req = { runId: '', state: '', machine: '', kind: '', sinceMs: 0, untilMs: 0, limit: 0, ...f };
  return new Promise((resolve, reject) => client.history(req, (err, res) => (err ? reject(err) : resolve(res!))));
}

/** Two calls (one succeeds, one fails) and one claim granted and released, on server `s`. */
async function someWork(s: Pick<TestServer, 'placement'>): Promise<void> {
  expect((await run(s.placement, runRequest({ runId: 'ok1', argv: ['true'] })).done).error).toBeNull();
  expect((await run(s.placement, runRequest({ runId: 'bad1', argv: ['sh', '-c', 'exit 4'] })).done).error).toBeNull();
  const c = claim(s.placement, { cpus: 1, runId: 'cl1', node: 'train' });
  await c.granted;
  await c.release();
}

describe('history of finished calls and claims', () => {
  it('lists them newest first with filters, and keeps them across a restart on the same state directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-history-'));
    open.push(() => rmSync(dir, { recursive: true, force: true }));
    const t0 = Date.now();
    const s1 = await startServer({ cpus: 2, flags: { stateDir: dir } });
    await someWork(s1);
    const before = await history(s1.placement);
    expect(before.durable).toBe(true);
    expect(before.entries.map((e) => [e.kind, e.runId, e.state])).toEqual([
      ['claim', 'cl1', 'released'],
      ['call', 'bad1', 'failed'],
      ['call', 'ok1', 'succeeded'],
    ]);
    const failed = before.entries[1];
    expect(failed).toMatchObject({ id: 'bad1:flow.node', machine: 'engine', failureType: 'ExitCode', attempt: 1 });
    expect(failed.endedMs).toBeGreaterThanOrEqual(failed.startedMs);
    expect(before.entries[0]).toMatchObject({ node: 'train', outcome: 'released', attempt: 0 });
    await s1.close();

    const s2 = await startServer({ cpus: 2, flags: { stateDir: dir } });
    open.push(() => s2.close());
    const after = await history(s2.placement);
    expect(after.entries).toEqual(before.entries);
    // filters
    expect((await history(s2.placement, { runId: 'ok1' })).entries.map((e) => e.state)).toEqual(['succeeded']);
    expect((await history(s2.placement, { state: 'failed' })).entries.map((e) => e.runId)).toEqual(['bad1']);
    expect((await history(s2.placement, { kind: 'claim' })).entries.map((e) => e.runId)).toEqual(['cl1']);
    expect((await history(s2.placement, { machine: 'elsewhere' })).matched).toBe(0);
    expect((await history(s2.placement, { sinceMs: Date.now() + 60_000 })).matched).toBe(0);
    expect((await history(s2.placement, { sinceMs: t0, limit: 1 })).entries.length).toBe(1);
    expect((await history(s2.placement, { sinceMs: t0, limit: 1 })).matched).toBe(3);
    const bad = await history(s2.placement, { state: 'exploded' }).catch((e: ServiceError) => e);
    expect((bad as ServiceError).code).toBe(status.INVALID_ARGUMENT);
    expect((bad as ServiceError).details).toContain('state: expected one of succeeded, failed, cancelled, lost');

    // the CLI prints the same, as a table and as JSON
    const table = await runBerth(['history', '--server', s2.address, '--since', '1h']);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ENDED \(UTC\)\s+KIND\s+STATE\s+ID\s+RUN\s+MACHINE\s+TOOK\s+DETAIL$/);
    expect(lines.slice(1, 4).map((l) => l.split(/\s+/).slice(2, 5))).toEqual([
      ['claim', 'released', before.entries[0].id],
      ['call', 'failed', 'bad1:flow.node'],
      ['call', 'succeeded', 'ok1:flow.node'],
    ]);
    expect(lines[4]).toMatch(/^3 of 3 matching \(kept 24h00m, journaled\)$/);
    const json = await runBerth(['history', '--server', s2.address, '--state', 'failed', '--json']);
    expect(JSON.parse(json.stdout).entries.map((e: { runId: string }) => e.runId)).toEqual(['bad1']);
    const usage = await runBerth(['history', '--server', s2.address, '--since', 'yesterday']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--since: expected a duration back from now');
  }, 30_000);

  it('survives a SIGKILL of berth serve: what a Released acknowledged is journaled, with what ended before it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-history-'));
    open.push(() => rmSync(dir, { recursive: true, force: true }));
    const serve = async () => {
      const child = spawnBerth(['serve', '--listen', '127.0.0.1:0', '--state-dir', dir, '--cpus', '2', '--gpus', '']);
      const exited = new Promise((r) => child.once('exit', r));
      open.push(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        return exited;
      });
      const line = await waitForLine(child, /"msg":"berth serving"/);
      const placement = new PlacementServiceClient(String(JSON.parse(line).address), credentials.createInsecure());
      open.push(() => placement.close());
      return { child, exited, placement };
    };
    const s1 = await serve();
    await someWork(s1); // ends with a claim's Released: acknowledged once journaled (SPEC S4), the calls before it too
    s1.child.kill('SIGKILL');
    await s1.exited;
    const s2 = await serve();
    const h = await history(s2.placement);
    expect(h.entries.map((e) => [e.kind, e.runId, e.state])).toEqual([
      ['claim', 'cl1', 'released'],
      ['call', 'bad1', 'failed'],
      ['call', 'ok1', 'succeeded'],
    ]);
  }, 30_000);

  it('with --journal off the history is kept in memory, for the life of the process only', async () => {
    const s = await startServer({ cpus: 2, flags: { journal: 'off', historyRetention: '1h' } });
    open.push(() => s.close());
    await someWork(s);
    const h = await history(s.placement);
    expect(h.durable).toBe(false);
    expect(h.retentionMs).toBe(3_600_000);
    expect(h.entries.map((e) => e.runId)).toEqual(['cl1', 'bad1', 'ok1']);
  });
});
