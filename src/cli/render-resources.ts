/**
 * Named resources and pools in `berth status` (issue 23 item 1; docs/resources.md): a machine's named per-machine
 * resources as `name free/total`, and the cluster-wide pools as `license/matlab 28/30 free`. Quantities are plain
 * numbers (multiples of 0.0001), as the snapshot carries them.
 */
import type { Machine, Pool } from '../../generated/ts/berth/v1/placement.js';

/** "nic 1/2, trainer 0/1" (names sorted); '' when the machine has no named resources. */
export function machineResources(m: Machine): string {
  const total = m.total?.resources ?? {};
  const free = m.free?.resources ?? {};
  return Object.keys(total)
    .sort()
    .map((name) => `${name} ${free[name] ?? 0}/${total[name]}`)
    .join(', ');
}

/** The pools section: ['', 'pools: license/matlab 28/30 free, …'], or [] when there are none. */
export function renderPools(pools: Pool[]): string[] {
  if (pools.length === 0) return [];
  const list = [...pools].sort((a, b) => a.name.localeCompare(b.name));
  return ['', `pools: ${list.map((p) => `${p.name} ${p.free}/${p.total} free`).join(', ')}`];
}
