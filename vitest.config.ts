import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most tests wait on real processes and sockets, not the CPU: three forks on two cores halve the
    // wall time (vitest's default on 2 cores is one fork).
    maxWorkers: 3,
    minWorkers: 1,
    globalSetup: ['test/support/build.ts', 'test/support/state-leaks.ts'],
    // each test file keeps berth's state in a temporary XDG_STATE_HOME (never ~/.local/state/berth)
    setupFiles: ['test/support/state-home.ts'],
  },
});
