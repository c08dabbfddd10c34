/**
 * Validation of a worker's Hello frame (SPEC R1) into the machine it brings.
 */
import { namedSchema } from '../resources/quantity.js';
import * as z from 'zod';
import type { Hello } from '../../generated/ts/berth/v1/worker.js';
import { BerthError, valueAt } from '../errors.js';
import { MAX_CPUS, MAX_RAM_MB } from '../placement/ask.js';
import { fieldPath } from './frames.js';
import type { MachineSpec } from '../placement/types.js';
import { MAX_DEVICE_ID, MAX_DEVICES } from '../resources/ranges.js';

const schema = z.object({
  name: z
    .string()
    .min(1, 'required')
    .max(63, 'at most 63 characters')
    .regex(/^[A-Za-z0-9_.-]+$/, 'a name holds only letters, digits and _ . -'),
  labels: z
    .array(
      z
        .string()
        .min(1)
        .max(63)
        .regex(/^[A-Za-z0-9_.-]+$/, 'a label holds only letters, digits and _ . -'),
    )
    .max(64),
  inventory: z
    .object(
      {
        cpus: z.number().int().min(0).max(MAX_CPUS),
        gpuIds: z
          .array(z.number().int().min(0).max(MAX_DEVICE_ID))
          .max(MAX_DEVICES, `at most ${MAX_DEVICES} device ids`)
          .refine((ids) => new Set(ids).size === ids.length, 'device ids must be unique'),
        ramMb: z.number().int().min(0).max(MAX_RAM_MB).optional(),
        resources: namedSchema,
        gpuType: z
          .string()
          .max(63, 'at most 63 characters')
          .regex(/^[A-Za-z0-9_.-]*$/, 'a GPU type holds only letters, digits and _ . - (e.g. a100, 1g.10gb)')
          .optional(),
        // Device names for CUDA_VISIBLE_DEVICES (UUIDs, MIG instances; issue 23 item 4): none, or one per id.
        gpuNames: z
          .array(
            z.string().regex(/^[A-Za-z0-9_.:/-]{1,128}$/, 'a device name holds 1–128 letters, digits and _ . : / -'),
          )
          .max(MAX_DEVICES),
      },
      { error: 'required' },
    )
    .refine((i) => i.gpuNames.length === 0 || i.gpuNames.length === i.gpuIds.length, {
      message: 'gpu_names names every gpu id, in order, or none',
      path: ['gpuNames'],
    }),
  maxParallel: z.number().int().min(0).max(65_536),
  version: z.string().max(64),
  agentId: z.string().max(1024, 'at most 1024 characters'),
  instanceId: z.string().max(128, 'at most 128 characters'),
  heldCalls: z
    .array(z.object({ callId: z.string().min(1, 'required').max(512, 'at most 512 characters') }))
    .max(65_536, 'at most 65536 held calls'),
});

/** `names` (parallel to `ids`) in the order of the sorted ids, as the books keep them. */
function namesInOrder(ids: number[], names: string[]): string[] {
  return ids
    .map((id, i) => [id, names[i]] as const)
    .sort((a, b) => a[0] - b[0])
    .map((x) => x[1]);
}

/** A value for an error message: JSON, cut to 80 characters (a status must stay small). */
function shown(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 80
    ? `${json.slice(0, 80)}… (${Array.isArray(value) ? `${value.length} items` : `${json.length} characters`})`
    : json;
}

/**
 * The machine a Hello attaches.
 * @throws BerthError invalid_argument naming `hello.<field>` and the value.
 */
export function machineFromHello(h: Hello): MachineSpec {
  const r = schema.safeParse(h);
  if (!r.success) {
    const issue = r.error.issues[0];
    const value = valueAt(h, issue.path);
    throw new BerthError(
      'invalid_argument',
      `${fieldPath(['hello', ...issue.path])}: ${issue.message} (got ${shown(value)})`,
    );
  }
  const v = r.data;
  return {
    name: v.name,
    labels: v.labels,
    inventory: {
      cpus: v.inventory.cpus,
      gpuIds: [...v.inventory.gpuIds].sort((a, b) => a - b),
      ramMb: v.inventory.ramMb,
      ...(v.inventory.gpuType ? { gpuType: v.inventory.gpuType } : {}),
      ...(v.inventory.gpuNames.length ? { gpuNames: namesInOrder(v.inventory.gpuIds, v.inventory.gpuNames) } : {}),
      ...(Object.keys(v.inventory.resources).length ? { resources: v.inventory.resources } : {}),
    },
    remote: true,
    maxParallel: v.maxParallel,
    version: v.version,
  };
}
