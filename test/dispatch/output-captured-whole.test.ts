/**
 * Acceptance 5 (SPEC D5): a job writing 10 MB to stdout and stderr interleaved, and one writing
 * invalid UTF-8 then 200 KB, both finish with their whole output in their log files, in order.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatch, scratch, statuses, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

const LINES = 80_000; // per stream; each line 64 bytes → ~10 MB in all

const noisy = `
const pad = 'x'.repeat(50);
let i = 0;
function more() {
  while (i < ${LINES}) {
    const a = process.stdout.write('out ' + String(i).padStart(8, '0') + ' ' + pad + '\\n');
    const b = process.stderr.write('err ' + String(i).padStart(8, '0') + ' ' + pad + '\\n');
    i++;
    if (!a) return process.stdout.once('drain', more);
    if (!b) return process.stderr.once('drain', more);
  }
}
more();`;

describe('output is captured whole, in order, whatever the bytes', () => {
  it('10 MB interleaved on stdout and stderr, and invalid UTF-8 then 200 KB, are captured complete', async () => {
    s = scratch();
    const logs = join(s.dir, 'logs');
    const file = s.batch([
      { name: 'noisy', devices: 1, argv: [process.execPath, '-e', noisy] },
      {
        name: 'binary',
        devices: 1,
        shell:
          "printf 'bad \\377\\376 bytes\\n'; head -c 200000 /dev/zero | tr '\\000' y; printf '\\nend \\377\\n'; exit 1",
      },
    ]);
    const r = await dispatch(file, '--devices', '0-1', '--log-dir', logs, '--junit', join(s.dir, 'j.xml'));
    expect(statuses(r.stdout)).toEqual({ noisy: 'passed', binary: 'failed' });
    const names = readdirSync(logs).sort();
    const noisyLog = readFileSync(join(logs, names.find((n) => n.includes('noisy'))!), 'latin1').split('\n');
    const outs = noisyLog.filter((l) => l.startsWith('out '));
    const errs = noisyLog.filter((l) => l.startsWith('err '));
    expect(outs).toHaveLength(LINES);
    expect(errs).toHaveLength(LINES);
    for (const [i, l] of outs.entries()) expect(l.slice(4, 12)).toBe(String(i).padStart(8, '0'));
    for (const [i, l] of errs.entries()) expect(l.slice(4, 12)).toBe(String(i).padStart(8, '0'));

    const binary = readFileSync(join(logs, names.find((n) => n.includes('binary'))!));
    expect(binary.subarray(0, 13)).toEqual(
      Buffer.from([...Buffer.from('bad '), 0xff, 0xfe, ...Buffer.from(' bytes\n')]),
    );
    expect(binary.includes(Buffer.from('y'.repeat(200_000)))).toBe(true);
    // the failed job's recent output is shown with invalid bytes replaced, in the console and the JUnit file
    expect(r.stdout).toContain('end \uFFFD');
    expect(readFileSync(join(s.dir, 'j.xml'), 'utf8')).toContain('end \uFFFD');
  });
});
