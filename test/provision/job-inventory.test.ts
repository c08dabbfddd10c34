import { describe, expect, it } from 'vitest';
import { constrainedInventory, detectInventory } from '../../src/resources/inventory.js';

describe('a worker takes its inventory from its job, not the whole host (issue 12)', () => {
  it(
    'inside a Slurm job: cores from SLURM_CPUS_ON_NODE, ' + 'MB from SLURM_MEM_PER_NODE, GPUs from SLURM_JOB_GPUS',
    async () => {
      const env = { SLURM_CPUS_ON_NODE: '2', SLURM_MEM_PER_NODE: '500', SLURM_JOB_GPUS: '1,3' };
      expect(constrainedInventory(env)).toEqual({ cpus: 2, ramMb: 500, gpuIds: [1, 3] });
      const inv = await detectInventory({}, env);
      expect(inv.cpus).toBe(2);
      expect(inv.ramMb).toBe(500);
    },
  );

  it('CUDA_VISIBLE_DEVICES names the GPUs a worker may offer; empty means none; flags still win', async () => {
    expect(constrainedInventory({ CUDA_VISIBLE_DEVICES: '0,2', SLURM_JOB_GPUS: '5' }).gpuIds).toEqual([0, 2]);
    expect(constrainedInventory({ CUDA_VISIBLE_DEVICES: '' }).gpuIds).toEqual([]);
    expect(constrainedInventory({ CUDA_VISIBLE_DEVICES: 'GPU-5e1f' }).gpuIds).toBeUndefined();
    expect(
      await detectInventory({ cpus: 3, ramMb: 100 }, { SLURM_CPUS_ON_NODE: '2', SLURM_MEM_PER_NODE: '500' }),
    ).toMatchObject({ cpus: 3, ramMb: 100 });
  });
});
