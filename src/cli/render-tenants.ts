/**
 * `berth status`: the tenants' lines (SPEC Q1, Q3), one per tenant in the config, e.g.
 * `tenant alice (cohort lab): gpus 6/4 nominal (borrowing up to 2), cpus 12/64 nominal; share 0.75 (weight 1)`;
 * the share only with fair sharing on.
 */
import type { TenantUsage } from '../../generated/ts/berth/v1/placement.js';

/** The lines for `tenants` (none when no tenant has a quota), after a blank line. */
export function renderTenants(tenants: TenantUsage[]): string[] {
  if (tenants.length === 0) return [];
  const lines = tenants.map((t) => {
    const parts = t.resources.map((r) => {
      const borrow =
        r.borrowingLimit < 0
          ? ' (borrowing unlimited)'
          : r.borrowingLimit > 0
            ? ` (borrowing up to ${r.borrowingLimit})`
            : '';
      return `${r.name} ${r.used}/${r.nominal} nominal${borrow}`;
    });
    const share = t.weight > 0 ? `; share ${t.dominantShare.toFixed(2)} (weight ${t.weight})` : '';
    return `tenant ${t.tenant}${t.cohort ? ` (cohort ${t.cohort})` : ''}: ${parts.join(', ') || 'no quota'}${share}`;
  });
  return ['', ...lines];
}
