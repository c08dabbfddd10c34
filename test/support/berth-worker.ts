/**
 * Test support: a real `berth worker` agent (bin/berth.js) attached to a test server, with its own
 * temporary state dir; `stop()` SIGKILLs it (if still running) and removes the dir.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished, spawnBerth, waitForLine } from './cli.js';

/** A running worker agent. */
export interface BerthWorker {
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `berth worker --server address --name name ...flags` and resolves once it attached. */
export async function startBerthWorker(address: string, name: string, flags: string[]): Promise<BerthWorker> {
  const state = mkdtempSync(join(tmpdir(), 'berth-worker-'));
  const args = ['worker', '--server', address, '--name', name, ...flags, '--state-dir', state, '--log-level', 'info'];
  const child = spawnBerth(args);
  const done = finished(child);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await done;
    rmSync(state, { recursive: true, force: true });
  };
  try {
    await waitForLine(child, /attached to server/);
  } catch (e) {
    await stop();
    throw e;
  }
  return { child, stop };
}
