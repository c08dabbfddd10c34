/**
 * Provisioner shapes with named resources (issue 23 item 1): a shape lists what its machines offer (`resources:` in
 * the config, units of 1e-4 inside), only such a shape covers an ask naming one, packing counts a planned
 * machine's named room (two trainer asks on a one-trainer shape start two machines), and the started worker is
 * given `--resources`.
 */
import { describe, expect, it } from 'vitest';
import { shapeSchema } from '../../src/config/provisioner-options.js';
import type { Shape, Unmet } from '../../src/placement/provisioner.js';
import { pack, shapeHolds } from '../../src/provision/pack.js';
import { workerArgv } from '../../src/provision/worker-command.js';
import { UNIT } from '../../src/resources/quantity.js';

const want = (claimId: string, res?: Record<string, number>): Unmet => ({
  claimId,
  amount: { cpus: 1, gpus: 0, res },
  ask: { cpus: 1, gpus: 0, label: '', policy: 'prefer', node: claimId, runId: '', env: {}, resources: res },
});
const trainerBox: Shape = { cpus: 8, gpus: 0, labels: [], resources: { trainer: UNIT } };
const plain: Shape = { cpus: 8, gpus: 0, labels: [] };

describe('provisioner shapes with named resources', () => {
  it('a shape in the config takes `resources:`, kept in units; a finer quantity is refused', () => {
    expect(shapeSchema.parse({ cpus: 8, resources: { trainer: 1, nic: 0.5 } }).resources).toEqual({
      trainer: UNIT,
      nic: UNIT / 2,
    });
    expect(shapeSchema.safeParse({ cpus: 8, resources: { trainer: 0.00001 } }).success).toBe(false);
  });

  it('only a shape with the resource covers an ask naming it', () => {
    expect(shapeHolds(plain, want('a', { trainer: UNIT }))).toBe(false);
    expect(shapeHolds(trainerBox, want('a', { trainer: UNIT }))).toBe(true);
  });

  it('a planned machine offers its trainer once: two trainer asks start two machines', () => {
    const p = pack([want('a', { trainer: UNIT }), want('b', { trainer: UNIT })], [], [trainerBox], 10);
    expect(p.planned).toEqual([trainerBox, trainerBox]);
  });

  it('the started worker is told its named resources', () => {
    const argv = workerArgv({ server: 'h:1', stateDir: '/tmp' }, 'p-1', trainerBox, false);
    expect(argv.slice(-2)).toEqual(['--resources', 'trainer=1']);
  });
});
