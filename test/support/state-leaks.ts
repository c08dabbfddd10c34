/**
 * Vitest global setup: makes the run's temporary state root (each test file's XDG_STATE_HOME is a
 * directory in it, state-home.ts), removed whole at the end (with what skipped files left), and
 * fails the run when its tests left new entries in the user's real berth state directories
 * ($XDG_STATE_HOME/berth as the user has it, and ~/.local/state/berth), compared before and after:
 * an entry there means a code path ignored XDG_STATE_HOME or a test passed a state dir of the user's.
 * Another berth test run on the same machine at the same time (by the same user) can add entries
 * too: BERTH_TEST_STATE_LEAKS=warn prints them instead of failing.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's temporary directory for test files' state homes. */
    stateRoot: string;
  }
}

/** The user's berth state directories (where berth writes without --state-dir). */
export function realStateDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const dirs = [join(os.homedir(), '.local', 'state', 'berth')];
  if (env.XDG_STATE_HOME) dirs.push(join(env.XDG_STATE_HOME, 'berth'));
  return [...new Set(dirs)];
}

/** Every entry of the directories (absolute paths); none when a directory does not exist. */
export function entries(dirs: string[]): Set<string> {
  const found = new Set<string>();
  for (const dir of dirs) {
    try {
      for (const name of readdirSync(dir)) found.add(join(dir, name));
    } catch {
      // absent: nothing there
    }
  }
  return found;
}

export default function setup(project: TestProject): () => void {
  const dirs = realStateDirs();
  const before = entries(dirs);
  const root = mkdtempSync(join(os.tmpdir(), 'berth-test-state-'));
  project.provide('stateRoot', root);
  return () => {
    rmSync(root, { recursive: true, force: true });
    const left = [...entries(dirs)].filter((e) => !before.has(e));
    if (!left.length) return;
    const message =
      `the tests left ${left.length} new entries in the user's berth state directory (tests must use temporary ` +
      `state dirs, test/support/state-home.ts; or another test run of this user added them):\n  ${left.join('\n  ')}`;
    if (process.env.BERTH_TEST_STATE_LEAKS !== 'warn') throw new Error(message);
    process.stderr.write(`warning: ${message}\n`);
  };
}
