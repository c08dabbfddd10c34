/**
 * The `provisioners:` list of the config file (SPEC V1, issue 12): what each provisioner can start
 * and how many, validated with zod. Keys are snake_case, as in the file; unknown keys are errors.
 */
import * as z from 'zod';
import { namedSchema } from '../resources/quantity.js';
import { gpuTypeSchema, plainName as name, positiveSeconds, seconds, wholeNumber } from './fields.js';

/** One machine shape: cores, GPU count, MB of RAM (absent = not limited) and the labels its worker carries. */
export const shapeSchema = z
  .strictObject({
    cpus: wholeNumber(1, 65536).describe('cores of the machine'),
    gpus: wholeNumber(0, 1024).default(0).describe('how many GPUs (a count, not ids)'),
    ram_mb: wholeNumber(1, 1 << 30)
      .optional()
      .describe('memory in MB; absent = not limited'),
    labels: z.array(name).default([]).describe('labels the started worker carries, for asks to require or prefer'),
    resources: namedSchema
      .optional()
      .describe('named resources the started worker offers (issue 23), e.g. {trainer: 1}; multiples of 0.0001'),
    gpu_type: gpuTypeSchema
      .optional()
      .describe('the type of its GPUs (issue 23), e.g. a100 or 1g.10gb, for asks naming gpu_type; needs gpus'),
  })
  .refine((s) => s.gpu_type === undefined || s.gpus > 0, {
    path: ['gpu_type'],
    message: 'a shape with gpu_type needs gpus',
  });

/** One entry of `provisioners:` (its `.shape` lists the keys an entry may have). */
export const provisionerObject = z.strictObject({
  name: name.describe('unique; shown in status and events; the machines it starts are named after it'),
  kind: z
    .enum(['slurm', 'local'], { error: 'expected slurm or local' })
    .describe('`slurm`: a `berth worker` batch job per machine; `local`: a `berth worker` child process per machine'),
  partition: name.optional().describe('the Slurm partition jobs are submitted to (slurm only)'),
  shapes: z
    .array(shapeSchema)
    .min(1, 'list at least one shape')
    .optional()
    .describe('the machines it can start; required for local, read from sinfo when absent for slurm'),
  max_machines: wholeNumber(1, 10_000).default(1).describe('most machines started or starting at once'),
  idle_timeout: seconds.default(60).describe('seconds a started machine may hold no claim before it is given back'),
  start_timeout: positiveSeconds.default(300).describe('seconds a started machine has to attach'),
  sbatch_args: z.array(z.string()).default([]).describe('extra arguments passed to sbatch (slurm only)'),
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
