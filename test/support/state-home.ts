/**
 * Vitest setup file (runs in each test file's process before the file): points XDG_STATE_HOME at a
 * temporary directory of this test file, so every `berth worker` and `berth serve` a test starts
 * (they inherit process.env) keeps its state there (SPEC R5 records, provisioned workers' logs),
 * never in the user's ~/.local/state/berth; the directory goes when the file's tests are done.
 * state-leaks.ts checks that nothing reached the real one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const home = mkdtempSync(join(os.tmpdir(), 'berth-state-home-'));
process.env.XDG_STATE_HOME = home;
afterAll(() => rmSync(home, { recursive: true, force: true }));
