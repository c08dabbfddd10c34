/**
 * Client scope (SPEC R7, issue 10 item 6): claim ids cannot be guessed; with `--client-tokens`,
 * Run-in-claim and Cancel act only on the caller's own claims and runs, and GetSnapshot lists
 * other identities' claims without their ids. Token files are re-read on SIGHUP by `berth serve`.
 */
import { status, type ServiceError } from '@grpc/grpc-js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PlacementServiceClient, GetSnapshotResponse } from '../../generated/ts/berth/v1/placement.js';
import { WorkerAgent } from '../../src/agent/agent.js';
import { silentLogger } from '../../src/log/logger.js';
import { finished, runBerth, spawnBerth, waitForLine } from '../support/cli.js';
import { claim, watch } from '../support/claims.js';
import { run, runRequest, terminal } from '../support/run-client.js';
import { clientWithToken } from '../support/token-client.js';
import { startServer, type TestServer } from '../support/server.js';

let dir = '';
const f = (n: string) => join(dir, n);
const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdef01';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-scope-'));
  writeFileSync(f('clients.yaml'), `alice: ${ALICE}\nbob: ${BOB}\n`);
  writeFileSync(f('wait.sh'), `while [ ! -e "${f('release')}" ]; do sleep 0.02; done; echo done\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
  rmSync(f('release'), { force: true });
});

/** A client whose every call carries `token`, closed after the test. */
function clientWith(address: string, token: string): PlacementServiceClient {
  const c = clientWithToken(address, token);
  open.push(() => c.close());
  return c;
}

function snapshot(c: PlacementServiceClient): Promise<GetSnapshotResponse> {
  return new Promise((resolve, reject) => c.getSnapshot({}, (e, r) => (e ? reject(e) : resolve(r))));
}

function cancel(c: PlacementServiceClient, runId: string): Promise<{ calls: number; claims: number }> {
  return new Promise((resolve, reject) => c.cancel({ runId }, (e, r) => (e ? reject(e) : resolve(r))));
}

async function scopedServer(): Promise<TestServer> {
  const s = await startServer({
    cpus: 4,
    flags: { clientTokens: f('clients.yaml'), token: 'shared-token-0123456789' },
  });
  open.push(() => s.close());
  return s;
}

describe('claim ids', () => {
  it('are random UUIDs, not a counter another client could guess', async () => {
    const s = await startServer({ cpus: 4 });
    open.push(() => s.close());
    const a = claim(s.placement, { cpus: 1 });
    const b = claim(s.placement, { cpus: 1 });
    const ids = [(await a.granted).claimId, (await b.granted).claimId];
    for (const id of ids) expect(id).toMatch(/^c-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(ids[0]).not.toBe(ids[1]);
    await a.release();
    await b.release();
  });
});

describe('with --client-tokens', () => {
  it("bob can neither run in alice's claim (NOT_FOUND) nor cancel her run (counts 0); alice can", async () => {
    const s = await scopedServer();
    const alice = clientWith(s.address, ALICE);
    const bob = clientWith(s.address, BOB);
    const held = claim(alice, { cpus: 1, runId: 'ra' });
    const claimId = (await held.granted).claimId;

    const stolen = await run(bob, runRequest({ claimId, runId: 'rb', argv: ['true'] })).done;
    expect(stolen.error?.code).toBe(status.NOT_FOUND);
    expect(stolen.error?.details).toContain(`no held claim "${claimId}"`);

    const mine = run(alice, runRequest({ claimId, runId: 'ra', argv: ['sh', f('wait.sh')] }));
    await new Promise<void>((resolve) =>
      s.server.context.events.subscribe((e) => e.kind === 'call_started' && resolve()),
    );
    expect(await cancel(bob, 'ra')).toEqual({ calls: 0, claims: 0 });
    writeFileSync(f('release'), '');
    const out = await mine.done;
    expect(out.error).toBeNull();
    expect(terminal(out)?.$case).toBe('result');

    const again = run(alice, runRequest({ claimId, runId: 'ra', node: 'second', argv: ['sh', '-c', 'sleep 30'] }));
    await new Promise<void>((resolve) =>
      s.server.context.events.subscribe((e) => e.kind === 'call_started' && resolve()),
    );
    expect(await cancel(alice, 'ra')).toEqual({ calls: 1, claims: 0 });
    expect((await again.done).error?.code).toBe(status.CANCELLED);
    await held.release();
  });

  it("GetSnapshot and WatchEvents show bob alice's claims without their ids, and alice her own with them", async () => {
    const s = await scopedServer();
    const alice = clientWith(s.address, ALICE);
    const bob = clientWith(s.address, BOB);
    const bobWatch = watch(bob);
    const aliceWatch = watch(alice);
    open.push(() => bobWatch.cancel());
    open.push(() => aliceWatch.cancel());
    await Promise.all([bobWatch.ready, aliceWatch.ready]);
    const placed = [bobWatch, aliceWatch].map((w) => w.next((e) => e.kind === 'node_placed' && e.node === 'a.held'));
    const held = claim(alice, { cpus: 4, node: 'a.held' });
    const claimId = (await held.granted).claimId;
    const [seenByBobEvent, seenByAliceEvent] = await Promise.all(placed);
    expect(seenByBobEvent.claimId).toBe('');
    expect(seenByAliceEvent.claimId).toBe(claimId);
    const waiting = claim(alice, { cpus: 1, node: 'a.waiting' });
    const queuedId = (await waiting.queued).claimId;

    const seenByBob = await snapshot(bob);
    expect(seenByBob.held.map((h) => [h.node, h.claimId])).toEqual([['a.held', '']]);
    expect(seenByBob.waiting.map((w) => [w.node, w.claimId])).toEqual([['a.waiting', '']]);
    expect(JSON.stringify(seenByBob)).not.toContain(claimId.slice(2));
    const seenByAlice = await snapshot(alice);
    expect(seenByAlice.held.map((h) => [h.node, h.claimId])).toEqual([['a.held', claimId]]);
    expect(seenByAlice.waiting.map((w) => [w.node, w.claimId])).toEqual([['a.waiting', queuedId]]);
    waiting.call.cancel();
    await held.release();
  });

  it(
    'berth serve refuses --client-tokens with an unguarded ' + 'WorkerStream, and a token file with a short token',
    async () => {
      const alone = await runBerth(['serve', '--listen', '127.0.0.1:0', '--client-tokens', f('clients.yaml')]);
      expect(alone.code).toBe(2);
      expect(alone.stderr).toContain(
        '--client-tokens needs --worker-tokens, --token or --tls-ca too: ' +
          "otherwise anyone could attach a worker and receive the clients' calls",
      );
      writeFileSync(f('short.yaml'), 'carol: zq9-short\n');
      const short = await runBerth([
        'serve',
        '--listen',
        '127.0.0.1:0',
        '--token',
        'shared-token-0123456789',
        '--client-tokens',
        f('short.yaml'),
      ]);
      expect(short.code).toBe(2);
      expect(short.stderr).toContain(
        `--client-tokens ${f('short.yaml')}: a token has at least 16 characters (name "carol")`,
      );
      expect(short.stderr).not.toContain('zq9-short');
    },
  );

  it('a client without a token, or with a wrong one, is UNAUTHENTICATED', async () => {
    const s = await scopedServer();
    await expect(snapshot(s.placement)).rejects.toMatchObject({ code: status.UNAUTHENTICATED });
    await expect(snapshot(clientWith(s.address, 'not-a-token-0123456789'))).rejects.toMatchObject({
      code: status.UNAUTHENTICATED,
      details: 'wrong token',
    });
  });
});

describe('berth serve re-reads token files on SIGHUP', () => {
  it(
    'after the files change and SIGHUP, ' + 'the old client and worker tokens are refused and the new ones accepted',
    async () => {
      writeFileSync(f('hup.yaml'), `alice: ${ALICE}\n`);
      writeFileSync(f('hup-workers.yaml'), `w1: ${BOB}\n`);
      const child = spawnBerth([
        'serve',
        '--listen',
        '127.0.0.1:0',
        '--cpus',
        '1',
        '--gpus',
        '',
        '--client-tokens',
        f('hup.yaml'),
        '--worker-tokens',
        f('hup-workers.yaml'),
      ]);
      const done = finished(child);
      open.push(async () => {
        child.kill('SIGTERM');
        await done;
      });
      const serving = await waitForLine(child, /berth serving/);
      const address = /"address":"([^"]+)"/.exec(serving)![1];
      expect(await snapshot(clientWith(address, ALICE))).toHaveProperty('machines');

      const renewed = 'alice-renewed-0123456789abcdef';
      const renewedWorker = 'w1-renewed-0123456789abcdef';
      writeFileSync(f('hup.yaml'), `alice: ${renewed}\n`);
      writeFileSync(f('hup-workers.yaml'), `w1: ${renewedWorker}\n`);
      const reread = waitForLine(child, /token files re-read/);
      child.kill('SIGHUP');
      await reread;
      const old = await snapshot(clientWith(address, ALICE)).catch((e: ServiceError) => e);
      expect(old).toMatchObject({ code: status.UNAUTHENTICATED, details: 'wrong token' });
      expect(await snapshot(clientWith(address, renewed))).toHaveProperty('machines');

      const worker = (token: string) => {
        const a = new WorkerAgent(
          {
            server: address,
            name: 'w1',
            labels: [],
            inventory: { cpus: 1, gpuIds: [] },
            maxParallel: 0,
            graceMs: 100,
            token,
            backoff: { baseMs: 20, capMs: 50 },
          },
          silentLogger,
        );
        open.push(() => a.stop());
        return a;
      };
      const stale = worker(BOB);
      stale.start();
      await stale.finished;
      expect(stale.fatal).toBe('the server refused the token: wrong token');
      const fresh = worker(renewedWorker);
      const attached = fresh.nextAttach();
      fresh.start();
      await attached;
      expect(fresh.status()).toMatchObject({ attached: true });
    },
  );
});
