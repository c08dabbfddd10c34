/**
 * The `tenants:` mapping of the config file (SPEC Q1, Q3, issue 22 item 3): client identity → its quota and its
 * weight in fair sharing. Each quota is a mapping of resource → amount, where a resource is `cpus`, `gpus`, `ram_mb`,
 * a named resource or a pool; amounts are plain numbers (0.5 GPU is half a GPU). Validated with zod; keys are
 * snake_case as in the file; unknown keys are errors. Re-read on SIGHUP with `priority_classes:`, all or nothing.
 */
import * as z from 'zod';
import { CLASS_NAME } from '../placement/ask.js';
import type { TenantQuotas } from '../placement/quota.js';
import { NAME_RULE, QUANTITY_RULE, RESOURCE_NAME, toUnits, type Named } from '../resources/quantity.js';

/** resource → amount (plain numbers; zeros kept: a nominal of 0 is a quota of nothing). */
const amounts = (what: string) =>
  z
    .record(z.string().regex(RESOURCE_NAME, NAME_RULE), z.number({ error: 'a number' }).refine(ok, QUANTITY_RULE), {
      error: 'a mapping of resource: amount, e.g. {gpus: 4, cpus: 64}',
    })
    .describe(what);

function ok(v: number): boolean {
  return toUnits(v) !== undefined;
}

/** One tenant's entry (its `.shape` lists the keys an entry may have). */
export const tenantObject = z.strictObject({
  cohort: z
    .string({ error: 'a cohort name' })
    .regex(CLASS_NAME, 'a cohort name: a letter, then letters, digits, _ and - (at most 63)')
    .optional()
    .describe('the cohort it borrows from and lends to; absent: it never borrows'),
  nominal: amounts('what it is guaranteed, per resource; resources not named are not limited for it').default({}),
  borrowing_limit: amounts(
    'at most this much beyond nominal, per resource (needs a cohort); absent: unlimited',
  ).optional(),
  lending_limit: amounts(
    'at most this much of its unused nominal lent to its cohort, per resource; absent: all',
  ).optional(),
  weight: z
    .number({ error: 'a number' })
    .min(0.0001, 'at least 0.0001')
    .max(1e6, 'at most 1000000')
    .optional()
    .describe('its weight in fair sharing (any tenant with one turns fair sharing on); absent: 1'),
});

/** The whole mapping, client identity → quota; limits only on resources its nominal names, only within a cohort. */
export const tenantsSchema = z.record(z.string().min(1, 'a client name'), tenantObject).superRefine((m, ctx) => {
  for (const [name, t] of Object.entries(m)) {
    for (const key of ['borrowing_limit', 'lending_limit'] as const) {
      const limits = t[key];
      if (!limits) continue;
      if (t.cohort === undefined)
        ctx.addIssue({ code: 'custom', path: [name, key], message: 'only a tenant in a cohort borrows or lends' });
      for (const r of Object.keys(limits)) {
        if (!(r in t.nominal))
          ctx.addIssue({ code: 'custom', path: [name, key, r], message: `not in its nominal (${keys(t.nominal)})` });
        else if (key === 'lending_limit' && limits[r] > t.nominal[r])
          ctx.addIssue({ code: 'custom', path: [name, key, r], message: `more than its nominal (${t.nominal[r]})` });
      }
    }
  }
});

const keys = (r: Record<string, number>) => Object.keys(r).join(', ') || 'none';

/** The quotas the placer reads (quota.ts), in units of 1e-4. */
export function toTenantQuotas(m: z.output<typeof tenantsSchema>): TenantQuotas {
  const out: TenantQuotas = {};
  for (const [name, t] of Object.entries(m)) {
    out[name] = {
      nominal: units(t.nominal),
      ...(t.cohort === undefined ? {} : { cohort: t.cohort }),
      ...(t.borrowing_limit ? { borrowingLimit: units(t.borrowing_limit) } : {}),
      ...(t.lending_limit ? { lendingLimit: units(t.lending_limit) } : {}),
      ...(t.weight === undefined ? {} : { weight: t.weight }),
    };
  }
  return out;
}

function units(r: Record<string, number>): Named {
  const out: Named = {};
  for (const k in r) out[k] = toUnits(r[k])!;
  return out;
}
