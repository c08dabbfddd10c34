/**
 * The provisioners section of `berth status` (issue 12; SPEC P10): per provisioner its kind,
 * shapes, machine count against max_machines and last error, then one line per machine it started
 * with its state and engine id (Slurm job id or pid).
 */
import { ProvisionedState, type ProvisionerStatus } from '../../generated/ts/berth/v1/placement.js';

const STATE: Record<number, string> = {
  [ProvisionedState.PROVISIONED_STATE_STARTING]: 'starting',
  [ProvisionedState.PROVISIONED_STATE_RUNNING]: 'running',
  [ProvisionedState.PROVISIONED_STATE_IDLE]: 'idle',
  [ProvisionedState.PROVISIONED_STATE_STOPPING]: 'stopping',
};

/** "2 cpu, 1 gpu, 2000 MB [hpc]". */
function shape(p: ProvisionerStatus, i: number): string {
  const s = p.shapes[i];
  const labels = p.shapeLabels[i] ? ` [${p.shapeLabels[i]}]` : '';
  return `${s.cpus} cpu, ${s.gpuIds.length} gpu${s.ramMb === undefined ? '' : `, ${s.ramMb} MB`}${labels}`;
}

/** Lines for `provisioners` ([] when there are none). */
export function renderProvisioners(provisioners: ProvisionerStatus[]): string[] {
  const out: string[] = [];
  for (const p of provisioners) {
    out.push('');
    const shapes = p.shapes.map((_, i) => shape(p, i)).join('; ') || 'none';
    out.push(`provisioner ${p.name} (${p.kind || '?'}): ${p.status}, max ${p.maxMachines}; shapes: ${shapes}`);
    if (p.lastError) out.push(`  last error: ${p.lastError}`);
    for (const m of p.machines) {
      const name = (m.name || '(requesting)').padEnd(16);
      out.push(
        `  ${name} ${(STATE[m.state] ?? '?').padEnd(8)} ` +
          `${m.engineId || '-'}  ${m.detail}  ${(m.sinceMs / 1000).toFixed(1)}s`,
      );
    }
  }
  return out;
}
