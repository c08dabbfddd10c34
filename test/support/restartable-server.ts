/**
 * Test support: a real `berth serve` process on a fixed loopback port and state dir (its journal), that a
 * test can SIGKILL (a crash: no drain, nothing released) and start again on the same port and state dir —
 * a server restart as issue 19 describes it. `close()` kills it and removes the state dir.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnBerth, waitForLine } from './cli.js';
import { closedPort } from './ports.js';

/** A `berth serve` that can be crashed and restarted; `flags` are passed to every start. */
export class RestartableServer {
  readonly stateDir = mkdtempSync(join(tmpdir(), 'berth-state-'));
  address = '';
  #child?: ChildProcess;

  constructor(readonly flags: string[]) {}

  /** Starts `berth serve` (on a new free port the first time, then the same one); resolves once it serves. */
  async start(): Promise<string> {
    this.address ||= `127.0.0.1:${await closedPort()}`;
    const child = spawnBerth(['serve', '--listen', this.address, '--state-dir', this.stateDir, ...this.flags]);
    this.#child = child;
    await waitForLine(child, /"msg":"berth serving"/);
    return this.address;
  }

  /** SIGKILLs the server and waits for it to exit. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  }

  /** Kills it (if running) and removes its state dir. */
  async close(): Promise<void> {
    await this.kill();
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}
