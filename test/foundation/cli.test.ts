import { describe, expect, it } from 'vitest';
import { runBerth } from '../support/cli.js';

describe('berth CLI', () => {
  it('--help lists serve, worker, dispatch and status', async () => {
    const r = await runBerth(['--help']);
    expect(r.code).toBe(0);
    for (const cmd of ['serve', 'worker', 'dispatch', 'status']) expect(r.stdout).toMatch(new RegExp(`^\\s+${cmd}\\b`, 'm'));
  });

  it.each([
    [['serve', '--cpus', '-3'], '--cpus', '-3'],
    [['serve', '--listen', 'nonsense'], '--listen', 'nonsense'],
    [['serve', '--gpus', '3-1'], '--gpus', '3-1'],
    [['serve', '--grace', 'soon'], '--grace', 'soon'],
    [['serve', '--grace', '-1'], '--grace', '-1'],
    [['serve', '--cpus', '1.5'], '--cpus', '1.5'],
  ])('berth %j exits 2 naming the flag, the value and what is wrong', async (args, flag, value) => {
    const r = await runBerth(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(flag);
    expect(r.stderr).toContain(value);
    expect(r.stderr).toMatch(/must be|expected|runs backwards/);
    expect(r.stderr).not.toContain('Invalid input');
  });

  it('a bad BERTH_* env value exits 2 naming the variable', async () => {
    const r = await runBerth(['serve'], { BERTH_CPUS: 'many' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('BERTH_CPUS');
    expect(r.stderr).toContain('many');
  });
});
