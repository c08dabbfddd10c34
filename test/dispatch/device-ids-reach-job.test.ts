/**
 * SPEC D4 (issue #5 review): `{devices}` is the range string (`0-3`); the device variable —
 * CUDA_VISIBLE_DEVICES or `--device-env` — is the comma list (`0,1,2,3`) that CUDA and Ascend parse,
 * as berth sets it for `--server` jobs. A job's relative cwd is taken from the batch file's directory.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatch, scratch, type Scratch } from './support.js';

let s: Scratch;
afterEach(() => s?.cleanup());

describe('device ids reach the job', () => {
  it('{devices} is 0-3 while CUDA_VISIBLE_DEVICES and --device-env get 0,1,2,3', async () => {
    s = scratch();
    const out = join(s.dir, 'seen');
    const file = s.batch([
      {
        name: 'four',
        devices: 4,
        shell: `echo "argv={devices} cuda=$CUDA_VISIBLE_DEVICES ascend=$ASCEND_RT_VISIBLE_DEVICES" > '${out}'`,
      },
    ]);
    const cuda = await dispatch(file, '--devices', '0-3');
    expect(cuda.code, cuda.stdout + cuda.stderr).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe('argv=0-3 cuda=0,1,2,3 ascend=\n');
    const ascend = await dispatch(file, '--devices', '0-3', '--device-env', 'ASCEND_RT_VISIBLE_DEVICES');
    expect(ascend.code, ascend.stdout + ascend.stderr).toBe(0);
    expect(readFileSync(out, 'utf8')).toMatch(/^argv=0-3 cuda=\S* ascend=0,1,2,3\n$/);
  });

  it("a relative cwd runs the job in the batch file's directory, wherever dispatch is started", async () => {
    s = scratch();
    mkdirSync(join(s.dir, 'work'));
    const file = s.batch([{ name: 'where', cwd: 'work', shell: 'pwd > here' }]);
    const r = await dispatch(file, '--devices', '0'); // runBerth starts dispatch in the repository root
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readFileSync(join(s.dir, 'work', 'here'), 'utf8').trim()).toBe(join(s.dir, 'work'));
  });
});
