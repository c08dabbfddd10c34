/**
 * Vitest setup file (runs in each test file's process before the file): points XDG_STATE_HOME at a
 * temporary directory of this test file, so every `berth worker` and `berth serve` a test starts
 * (they inherit process.env) keeps its state there (SPEC R5 records, provisioned workers' logs),
 * never in the user's ~/.local/state/berth; the directory goes when the file's tests are done (and
 * with the run's state root, state-leaks.ts, which also checks that nothing reached the real one).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, inject } from 'vitest';

const home = mkdtempSync(join(inject('stateRoot'), 'home-'));
process.env.XDG_STATE_HOME = home;
afterAll(() => rmSync(home, { recursive: true, force: true }));
