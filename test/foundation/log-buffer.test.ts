import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** Runs test/support/log-then-crash.ts and resolves with its exit code and stderr. */
function crash(lines: number): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/log-then-crash.ts', String(lines)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('buffered log lines', () => {
  it('a crash: every line logged before it reaches stderr, in order, before the stack', async () => {
    const r = await crash(200);
    expect(r.code).toBe(1);
    const at = r.stderr.indexOf('crash after logging');
    expect(at).toBeGreaterThan(0);
    const json = r.stderr
      .slice(0, at)
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { i: number });
    expect(json.map((l) => l.i)).toEqual(Array.from({ length: 200 }, (_, k) => k + 1));
  });

  it('a line after a quiet spell is written at once, even while the event loop is held (start-up)', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/log-then-block.ts'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      // The child answers only once its first line has arrived; a line held in the buffer would deadlock.
      if (stderr.includes('first, while') && child.stdin!.writable) child.stdin!.end('go\n');
    });
    const stuck = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    clearTimeout(stuck);
    expect(code).toBe(0);
    expect(stderr).toContain('second, after the answer');
  });
});
