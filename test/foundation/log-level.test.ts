/**
 * Log levels are accepted in any case (issue #2 finding 5): `BERTH_LOG_LEVEL=INFO` is `info`,
 * for serve and worker; an unknown level still exits 2 naming the variable.
 */
import { describe, expect, it } from 'vitest';
import { OptionsError } from '../../src/config/fields.js';
import { resolveServeOptions } from '../../src/config/serve-options.js';
import { resolveWorkerOptions } from '../../src/config/worker-options.js';
import { finished, runBerth, spawnBerth, waitForLine } from '../support/cli.js';

describe('log levels', () => {
  it.each([
    ['INFO', 'info'],
    ['Debug', 'debug'],
    [' WARN ', 'warn'],
    ['silent', 'silent'],
  ])('BERTH_LOG_LEVEL=%j is %j for serve and worker', (given, level) => {
    expect(resolveServeOptions({}, { BERTH_LOG_LEVEL: given }).logLevel).toBe(level);
    expect(resolveWorkerOptions({}, { BERTH_LOG_LEVEL: given }).logLevel).toBe(level);
    expect(resolveWorkerOptions({ logLevel: given }, {}).logLevel).toBe(level);
  });

  it('an empty BERTH_LOG_LEVEL counts as unset (info)', () => {
    expect(resolveServeOptions({}, { BERTH_LOG_LEVEL: '' }).logLevel).toBe('info');
  });

  it('an unknown level is refused naming the variable and the levels', () => {
    expect(() => resolveServeOptions({}, { BERTH_LOG_LEVEL: 'loud' })).toThrow(OptionsError);
    expect(() => resolveServeOptions({}, { BERTH_LOG_LEVEL: 'loud' })).toThrow(
      /BERTH_LOG_LEVEL: expected one of fatal, error, warn, info.*"loud"/,
    );
  });

  it('berth serve with BERTH_LOG_LEVEL=INFO serves, and exits 0 on SIGTERM', async () => {
    const child = spawnBerth(['serve', '--listen', '127.0.0.1:0', '--cpus', '1', '--gpus', ''], {
      BERTH_LOG_LEVEL: 'INFO',
    });
    const done = finished(child);
    await waitForLine(child, /berth serving/);
    child.kill('SIGTERM');
    expect((await done).code).toBe(0);
  });

  it('berth worker --log-level LOUD exits 2 naming the flag', async () => {
    const r = await runBerth(['worker', '--log-level', 'LOUD']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--log-level: expected one of');
  });
});
