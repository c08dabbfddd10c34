/**
 * Provisioner shapes with typed GPUs (issue 23 item 4): a shape names its GPUs' type (`gpu_type:` in the config),
 * only such a shape covers an ask naming that type, a GPU share needs a shape with GPUs, the started worker is given
 * `--gpu-type`; and through the real server with a local provisioner, an ask for a type no attached machine has
 * waits for the machine the shape starts instead of failing, and is granted on it.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { shapeSchema } from '../../src/config/provisioner-options.js';
import type { Shape, Unmet } from '../../src/placement/provisioner.js';
import { shapeHolds } from '../../src/provision/pack.js';
import { workerArgv } from '../../src/provision/worker-command.js';
import { claim } from '../support/claims.js';
import { configFile, queuedMatching, removeTempDirs, tempDir } from '../support/provisioning.js';
import { startServer, type TestServer } from '../support/server.js';

afterAll(removeTempDirs);

const want = (claimId: string, gpuType?: string, share?: number): Unmet => ({
  claimId,
  amount: { cpus: 1, gpus: share ? 0 : 1, ...(gpuType ? { gpuType } : {}), ...(share ? { share } : {}) },
  ask: { cpus: 1, gpus: share ? 0 : 1, label: '', policy: 'prefer', node: claimId, runId: '', env: {}, gpuType },
});
const a100: Shape = { cpus: 8, gpus: 2, labels: [], gpuType: 'a100' };
const untyped: Shape = { cpus: 8, gpus: 2, labels: [] };
const cpuOnly: Shape = { cpus: 8, gpus: 0, labels: [] };

describe('provisioner shapes with typed GPUs', () => {
  it('a shape in the config takes `gpu_type:`, only with GPUs; a bad type is refused naming the rule', () => {
    expect(shapeSchema.parse({ cpus: 8, gpus: 2, gpu_type: '1g.10gb' }).gpu_type).toBe('1g.10gb');
    const none = shapeSchema.safeParse({ cpus: 8, gpu_type: 'a100' });
    expect(none.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['gpu_type', 'a shape with gpu_type needs gpus'],
    ]);
    expect(shapeSchema.safeParse({ cpus: 8, gpus: 1, gpu_type: 'a 100' }).error?.issues[0].message).toMatch(
      /a GPU type holds 1–63 letters/,
    );
  });

  it('only a shape of the type covers an ask naming it; a share needs a shape with GPUs', () => {
    expect(shapeHolds(untyped, want('a', 'a100'))).toBe(false);
    expect(shapeHolds(a100, want('a', 'h100'))).toBe(false);
    expect(shapeHolds(a100, want('a', 'a100'))).toBe(true);
    expect(shapeHolds(a100, want('b'))).toBe(true); // an untyped ask takes any GPU
    expect(shapeHolds(cpuOnly, want('c', undefined, 5000))).toBe(false);
    expect(shapeHolds(untyped, want('c', undefined, 5000))).toBe(true);
  });

  it('the started worker is told its GPU type', () => {
    const argv = workerArgv({ server: 'h:1', stateDir: '/tmp' }, 'p-1', a100, true);
    expect(argv.slice(-2)).toEqual(['--gpu-type', 'a100']);
  });
});

describe('an ask for a GPU type only a provisioner shape has', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('waits for the machine the shape starts, and is granted on it', async () => {
    const yaml = `
provisioners:
  - name: typed
    kind: local
    shapes: [{ cpus: 1, gpus: 1, gpu_type: a100 }]
    max_machines: 1
    idle_timeout: 1
    start_timeout: 60
`;
    t = await startServer({ cpus: 1, flags: { config: configFile(tempDir(), yaml) } });
    const c = claim(t.placement, { cpus: 1, gpus: 1, gpuType: 'a100' });
    await queuedMatching(c, /waiting for typed: /);
    const g = await c.granted;
    expect(g.machine).toBe('typed-1');
    expect(g.allocation?.gpuIds).toEqual([0]);
    await c.release();
  }, 30_000);
});
