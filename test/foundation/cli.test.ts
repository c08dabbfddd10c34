import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { runBerth } from '../support/cli.js';

/** Runs `fn` with a loopback port that another socket holds, and frees the port afterwards. */
async function withTakenPort(fn: (port: number) => Promise<void>): Promise<void> {
  const holder = createServer();
  const port = await new Promise<number>((resolve) =>
    holder.listen(0, '127.0.0.1', () => resolve((holder.address() as { port: number }).port)),
  );
  try {
    await fn(port);
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
}

describe('berth CLI', () => {
  it('--help lists serve, worker, dispatch and status', async () => {
    const r = await runBerth(['--help']);
    expect(r.code).toBe(0);
    for (const cmd of ['serve', 'worker', 'dispatch', 'status'])
      expect(r.stdout).toMatch(new RegExp(`^\\s+${cmd}\\b`, 'm'));
  });

  it.each([
    [['serve', '--cpus', '-3'], '--cpus', '-3'],
    [['serve', '--listen', 'nonsense'], '--listen', 'nonsense'],
    [['serve', '--gpus', '3-1'], '--gpus', '3-1'],
    [['serve', '--grace', 'soon'], '--grace', 'soon'],
    [['serve', '--grace', '-1'], '--grace', '-1'],
    [['serve', '--cpus', '1.5'], '--cpus', '1.5'],
    [['worker', '--disconnect-grace', 'soon'], '--disconnect-grace', 'soon'],
    [['worker', '--disconnect-grace', '-5'], '--disconnect-grace', '-5'],
    [['worker', '--disconnect-grace', '90000'], '--disconnect-grace', '90000'],
  ])('berth %j exits 2 naming the flag, the value and what is wrong', async (args, flag, value) => {
    const r = await runBerth(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(flag);
    expect(r.stderr).toContain(value);
    expect(r.stderr).toMatch(/must be|expected|runs backwards/);
    expect(r.stderr).not.toContain('Invalid input');
  });

  it.each([
    [['serve', '--gpus', '0-65535'], '--gpus', '0-65535', 'at most 4096'],
    [['worker', '--gpus', '0-65535'], '--gpus', '0-65535', 'at most 4096'],
    [['worker', '--gpus', '0-4096'], '--gpus', '0-4096', 'at most 4096'],
    [['serve', '--gpus', '65536'], '--gpus', '65536', 'above 65535'],
    [['serve', '--gpus', '0,0'], '--gpus', '0,0', 'device 0 is listed twice'],
    [['worker', '--gpus', '0-3,2'], '--gpus', '0-3,2', 'device 2 is listed twice'],
  ])(
    'berth %j: one device limit for every command (at most 4096 ids, each ≤ 65535, none twice) → exit 2',
    async (args, flag, value, why) => {
      const r = await runBerth([...args, '--log-level', 'silent']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`berth: ${flag}:`);
      expect(r.stderr).toContain(value);
      expect(r.stderr).toContain(why);
    },
  );

  it.each([
    [
      ['serve', '--tls-cert', '/nonexistent', '--tls-key', '/nonexistent'],
      "berth: --tls-cert: cannot read '/nonexistent': no such file",
    ],
    [['worker', '--tls-ca', '/nonexistent'], "berth: --tls-ca: cannot read '/nonexistent': no such file"],
    [['serve', '--tls-cert', '/', '--tls-key', '/'], "berth: --tls-cert: cannot read '/': is a directory"],
  ])('berth %j: an unreadable file exits 2 naming the flag, the file and why', async (args, said) => {
    const r = await runBerth(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(said);
    expect(r.stderr).not.toContain('ENOENT');
  });

  it('berth serve on a port already taken exits 1 with one line naming --listen, the address and why', async () => {
    await withTakenPort(async (port) => {
      const r = await runBerth(['serve', '--listen', `127.0.0.1:${port}`, '--log-level', 'warn']);
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(`berth: --listen 127.0.0.1:${port}: address already in use`);
    });
  });

  it('a fatal message comes after the buffered log lines that led to it (last line of stderr)', async () => {
    await withTakenPort(async (port) => {
      const r = await runBerth(['serve', '--listen', `127.0.0.1:${port}`, '--log-level', 'info']);
      expect(r.code).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines.at(-1)).toBe(`berth: --listen 127.0.0.1:${port}: address already in use`);
      const logged = lines.slice(0, -1).map((l) => JSON.parse(l) as { msg: string });
      expect(logged.map((l) => l.msg)).toContain('engine inventory');
    });
  });

  it('a bad BERTH_* env value exits 2 naming the variable', async () => {
    const r = await runBerth(['serve'], { BERTH_CPUS: 'many' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('BERTH_CPUS');
    expect(r.stderr).toContain('many');
  });
});
