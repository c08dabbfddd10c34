/**
 * The `priority_classes:` mapping of the config file (SPEC Q1, issue 22): class name → its value, whether it is the
 * default class, and whether its claims may preempt (`preemption`, SPEC Q2). Validated with zod; keys are
 * snake_case as in the file; unknown keys are errors. Re-read on SIGHUP, all or nothing.
 */
import * as z from 'zod';
import { CLASS_NAME, MAX_PRIORITY } from '../placement/ask.js';
import type { PriorityClasses } from '../placement/priority.js';

/** One class (its `.shape` lists the keys a class may have). */
export const priorityClassObject = z.strictObject({
  value: z
    .number({ error: 'a whole number' })
    .int('a whole number')
    .min(-MAX_PRIORITY, `at least -${MAX_PRIORITY}`)
    .max(MAX_PRIORITY, `at most ${MAX_PRIORITY}`)
    .describe(`the priority its claims take; higher is served first; ±${MAX_PRIORITY}`),
  default: z
    .boolean({ error: 'true or false' })
    .default(false)
    .describe('asks that name neither a priority nor a class take this class; at most one class is the default'),
  preemption: z
    .enum(['lower', 'never'], { error: 'expected lower or never' })
    .default('lower')
    .describe('`lower`: its claims may preempt strictly lower ones (SPEC Q2); `never`: they wait without evicting'),
  tenants: z
    .array(z.string({ error: 'a client name' }).min(1, 'a client name'), { error: 'a list of client names' })
    .min(1, 'at least one client name')
    .optional()
    .describe(
      'the client identities (--client-tokens names, certificate names) that may name this class; absent: every ' +
        'caller. A bare priority is then at most the highest class open to the caller',
    ),
});

/** The whole mapping, name → class; at most one default. */
export const priorityClassesSchema = z
  .record(
    z.string().regex(CLASS_NAME, 'a class name: a letter, then letters, digits, _ and - (at most 63)'),
    priorityClassObject,
  )
  .superRefine((m, ctx) => {
    const dflt = Object.keys(m).filter((k) => m[k].default);
    if (dflt.length > 1)
      ctx.addIssue({ code: 'custom', path: [dflt[1]], message: `only one default class (also ${dflt[0]})` });
    for (const k of dflt)
      if (m[k].tenants)
        ctx.addIssue({
          code: 'custom',
          path: [k, 'tenants'],
          message: "the default class is every caller's: no tenants",
        });
  });

/** The classes the placer reads (priority.ts). */
export function toPriorityClasses(m: z.output<typeof priorityClassesSchema>): PriorityClasses {
  const out: PriorityClasses = {};
  for (const [name, c] of Object.entries(m))
    out[name] = {
      value: c.value,
      default: c.default,
      preemption: c.preemption,
      ...(c.tenants ? { tenants: c.tenants } : {}),
    };
  return out;
}
