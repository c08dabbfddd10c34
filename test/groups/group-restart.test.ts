/**
 * Groups across a `berth serve` SIGKILL (rule G7, SPEC S3/S4): a real server restarted on the same port and state
 * directory, a real `berth worker` that reconnects. A granted group comes back whole — every member on its machine
 * with its GPU ids — awaits its holder for the claim hold, is taken back with its resume token (a wrong one is
 * NOT_FOUND), and its GPUs go to nobody else meanwhile; a group nobody resumes is released whole when the hold runs
 * out, and the group waiting for its GPUs is granted then.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { MachineState, PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';
import { claim } from '../support/claims.js';
import { spawnBerth } from '../support/cli.js';
import { claimGroup, GroupStrategy, resumeGroup } from '../support/groups.js';
import { RestartableServer } from '../support/restartable-server.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function server(flags: string[]): Promise<{ s: RestartableServer; client: PlacementServiceClient }> {
  const s = new RestartableServer(['--grace', '1', ...flags]);
  cleanup.push(() => s.close());
  const address = await s.start();
  const client = new PlacementServiceClient(address, credentials.createInsecure());
  cleanup.push(() => client.close());
  return { s, client };
}

/** A real `berth worker` named `name` with `flags`, resolved once the server lists it. */
async function worker(client: PlacementServiceClient, address: string, name: string, flags: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'berth-w-'));
  const child: ChildProcess = spawnBerth(['worker', '--server', address, '--name', name, '--state-dir', dir, ...flags]);
  cleanup.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  await until(async () =>
    (await snapshot(client)).machines.some((m) => m.name === name && m.state === MachineState.MACHINE_STATE_CONNECTED),
  );
  return child;
}

const where = (members: { machine: string; allocation?: { gpuIds: number[] } }[]) =>
  members.map((m) => [m.machine, m.allocation?.gpuIds]);

describe('groups across a server SIGKILL', () => {
  it('a granted group comes back whole, keeps its GPUs from others, and its holder resumes it with its token', async () => {
    const { s, client } = await server(['--cpus', '4', '--gpus', '0-3', '--claim-hold', '30', '--restart-hold', '30']);
    await worker(client, s.address, 'w1', ['--cpus', '2', '--gpus', '0-1']);
    const g = claimGroup(
      client,
      [
        { cpus: 1, gpus: 1 },
        { cpus: 1, gpus: 2 },
      ],
      GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD,
    );
    const granted = await g.granted;
    expect(granted.resumeToken).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(new Set(granted.members.map((m) => m.machine))).toEqual(new Set(['engine', 'w1']));
    await s.kill();
    await g.ended;

    await s.start(); // same port and state dir: the worker reconnects by itself
    const snap = await snapshot(client);
    expect(snap.groups.map((v) => [v.groupId, v.state])).toEqual([[granted.groupId, 'held']]);
    expect(where(snap.groups[0].members)).toEqual(where(granted.members));
    expect(snap.held).toEqual([]); // members are listed with their group only
    // The engine's GPUs the restored member holds go to nobody else: a 4-GPU ask waits, a smaller one gets the rest.
    const engineMember = granted.members.find((m) => m.machine === 'engine');
    const rest = claim(client, { cpus: 1, gpus: 4 - (engineMember?.allocation?.gpuIds.length ?? 0) });
    const restIds = (await rest.granted).allocation?.gpuIds ?? [];
    for (const id of engineMember?.allocation?.gpuIds ?? []) expect(restIds).not.toContain(id);
    await rest.release();

    const wrong = resumeGroup(client, granted.groupId, 'A'.repeat(22));
    expect((await wrong.ended)?.code).toBe(status.NOT_FOUND);
    const back = resumeGroup(client, granted.groupId, granted.resumeToken);
    const again = await back.granted;
    expect(again).toMatchObject({ groupId: granted.groupId, resumed: true, strategy: granted.strategy });
    expect(again.members).toEqual(granted.members);
    await back.release();
    await until(async () => (await snapshot(client)).groups.length === 0);
    const after = await snapshot(client);
    expect(after.machines.find((m) => m.name === 'w1')?.free?.gpus).toBe(2);
    expect(after.machines.find((m) => m.name === 'engine')?.free?.gpus).toBe(4);
  });

  it('a restored group nobody resumes is released whole when the claim hold runs out; a waiting group gets it', async () => {
    const { s, client } = await server(['--cpus', '4', '--gpus', '0-3', '--claim-hold', '1', '--restart-hold', '1']);
    const g = claimGroup(
      client,
      [
        { cpus: 1, gpus: 2 },
        { cpus: 1, gpus: 2 },
      ],
      GroupStrategy.GROUP_STRATEGY_STRICT_PACK,
    );
    const first = await g.granted;
    await s.kill();
    await g.ended;

    await s.start();
    expect((await snapshot(client)).groups.map((v) => v.groupId)).toEqual([first.groupId]);
    const next = claimGroup(client, [{ cpus: 1, gpus: 4 }]);
    await next.queued; // every GPU is the restored group's until its hold runs out
    const granted = await next.granted;
    expect(granted.members[0].allocation?.gpuIds).toEqual([0, 1, 2, 3]);
    const snap = await snapshot(client);
    expect(snap.groups.map((v) => v.groupId)).toEqual([granted.groupId]);
    const late = resumeGroup(client, first.groupId, first.resumeToken);
    expect((await late.ended)?.code).toBe(status.NOT_FOUND);
    await next.release();
  });
});
