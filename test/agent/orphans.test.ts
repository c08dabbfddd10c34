/**
 * Processes a worker starts die with it (SPEC R5, issue 10 item 8): a SIGKILLed `berth worker`
 * leaves neither its command nor its Python process running (each has a watchdog in its process
 * group), and a restarted worker ends what its predecessor left (recorded in --state-dir) before
 * it says Hello, so its books never offer resources a leftover process still uses.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunResponse } from '../../generated/ts/berth/v1/placement.js';
import { finished, spawnBerth, waitForLine } from '../support/cli.js';
import { liveMembers } from '../support/process-groups.js';
import { runRequest } from '../support/run-client.js';
import { startServer, type TestServer } from '../support/server.js';

const open: Array<() => Promise<void> | void> = [];
const pids: number[] = [];
afterEach(async () => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(-pid, 'SIGKILL'); // only if the test failed: nothing may outlive it
    } catch {
      // gone, as it should be
    }
  }
  for (const close of open.splice(0).reverse()) await close();
});

/** True while `pid` runs (a zombie holds nothing but its pid). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Resolves true once none of `list` runs, false after `ms` (bounded, reads /proc only). */
async function allGone(list: number[], ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (list.some(running)) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

function worker(s: TestServer, stateDir: string): ChildProcess {
  const child = spawnBerth([
    'worker',
    '--server',
    s.address,
    '--name',
    'w1',
    '--labels',
    'w',
    '--cpus',
    '2',
    '--gpus',
    '',
    '--state-dir',
    stateDir,
  ]);
  open.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

/** Starts a Run on w1 and resolves with the pid its process prints first ("pid <n>"). */
function runAndPid(s: TestServer, node: string, payload: { argv?: string[]; source?: string }): Promise<number> {
  const call = s.placement.run(runRequest({ label: 'w', node, cpus: 1, ...payload }));
  call.on('error', () => undefined); // it ends UNAVAILABLE when its worker is killed
  open.push(() => call.cancel());
  return new Promise((resolve) => {
    call.on('data', (r: RunResponse) => {
      const m =
        r.kind?.$case === 'event' && r.kind.value.kind?.$case === 'log'
          ? /^pid (\d+)/.exec(r.kind.value.kind.value.line)
          : null;
      if (m) {
        pids.push(Number(m[1]));
        resolve(Number(m[1]));
      }
    });
  });
}

const COMMAND = ['sh', '-c', 'echo pid $$; exec sleep 300'];
const PYTHON = 'import os, time\ndef process():\n    print("pid", os.getpid(), flush=True)\n    time.sleep(300)\n';

async function setup() {
  const s = await startServer({ cpus: 0 });
  open.push(() => s.close());
  const stateDir = mkdtempSync(join(tmpdir(), 'berth-state-'));
  open.push(() => rmSync(stateDir, { recursive: true, force: true }));
  const w = worker(s, stateDir);
  await waitForLine(w, /attached to server/);
  const [command, python] = await Promise.all([
    runAndPid(s, 'cmd', { argv: COMMAND }),
    runAndPid(s, 'py', { source: PYTHON }),
  ]);
  return { s, stateDir, w, command, python };
}

describe('processes die with their worker', () => {
  it('SIGKILL of berth worker ends its running command and its Python process within seconds', async () => {
    const { w, command, python } = await setup();
    expect([command, python].every(running)).toBe(true);
    const exited = finished(w);
    w.kill('SIGKILL');
    await exited;
    expect(await allGone([command, python], 5000)).toBe(true);
  });

  it('a restarted worker ends what a killed predecessor left (watchdogs killed too) before it attaches', async () => {
    const { s, stateDir, w, command, python } = await setup();
    // Kill each group's watchdog first: only the state directory can end these processes now.
    for (const leader of [command, python])
      for (const pid of liveMembers(leader)) if (pid !== leader) process.kill(pid, 'SIGKILL');
    const exited = finished(w);
    w.kill('SIGKILL');
    await exited;
    expect([command, python].every(running)).toBe(true); // left behind

    const next = worker(s, stateDir);
    const ended = waitForLine(next, /ended process groups a previous agent left running/);
    await waitForLine(next, /attached to server/);
    expect(await ended).toContain(String(command));
    expect(running(command)).toBe(false); // ended before the Hello, not after
    expect(running(python)).toBe(false);
  });
});
