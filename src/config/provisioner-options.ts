/**
 * The `provisioners:` list of the config file (SPEC V1, issue 12): what each provisioner can start
 * and how many, validated with zod. Keys are snake_case, as in the file; unknown keys are errors.
 */
import * as z from 'zod';
import { plainName as name, positiveSeconds, seconds, wholeNumber } from './fields.js';

/** One machine shape: cores, GPU count, MB of RAM (absent = not limited) and the labels its worker carries. */
export const shapeSchema = z.strictObject({
  cpus: wholeNumber(1, 65536),
  gpus: wholeNumber(0, 1024).default(0),
  ram_mb: wholeNumber(1, 1 << 30).optional(),
  labels: z.array(name).default([]),
});

/** One entry of `provisioners:` (its `.shape` lists the keys an entry may have). */
export const provisionerObject = z.strictObject({
  name,
  kind: z.enum(['slurm', 'local'], { error: 'expected slurm or local' }),
  partition: name.optional(),
  shapes: z.array(shapeSchema).min(1, 'list at least one shape').optional(),
  max_machines: wholeNumber(1, 10_000).default(1),
  idle_timeout: seconds.default(60),
  start_timeout: positiveSeconds.default(300),
  sbatch_args: z.array(z.string()).default([]),
});

const provisionerSchema = provisionerObject.superRefine((p, ctx) => {
  const refuse = (key: string, message: string) => ctx.addIssue({ code: 'custom', path: [key], message });
  if (p.kind === 'local' && !p.shapes) refuse('shapes', 'a local provisioner needs shapes');
  if (p.kind !== 'slurm' && p.partition !== undefined) refuse('partition', 'only for kind slurm');
  if (p.kind !== 'slurm' && p.sbatch_args.length) refuse('sbatch_args', 'only for kind slurm');
});

/** The whole list; names must be unique. */
export const provisionersSchema = z.array(provisionerSchema).superRefine((list, ctx) => {
  const seen = new Set<string>();
  list.forEach((p, i) => {
    const message = `provisioner name '${p.name}' is used twice`;
    if (seen.has(p.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message });
    seen.add(p.name);
  });
});

/** One machine shape (units: cores, GPU count, MB). */
export type ShapeConfig = z.output<typeof shapeSchema>;
/** One validated provisioner entry. Units: idle_timeout and start_timeout in seconds. */
export type ProvisionerConfig = z.output<typeof provisionerSchema>;
