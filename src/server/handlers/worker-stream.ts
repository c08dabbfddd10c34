/**
 * WorkerStream RPC (placement part): a worker's Hello attaches its books (SPEC P1); the stream
 * ending — half-close, cancel, disconnect, drain — detaches them (W3). Re-attaching under the
 * same name replaces the old stream, which is ended (W1).
 * Errors: INVALID_ARGUMENT naming the field for a bad Hello or a first frame that is not Hello.
 */
import { z } from 'zod';
import type { WorkerStreamRequest, WorkerStreamResponse } from '../../../generated/ts/berth/v1/worker.js';
import { BerthError } from '../../errors.js';
import { MAX_CPUS, MAX_RAM_MB } from '../../placement/ask.js';
import type { MachineSpec } from '../../placement/types.js';
import { MAX_DEVICE_ID } from '../../resources/ranges.js';
import type { ServerContext } from '../context.js';
import { bidiStream } from '../edge.js';
import { SERVER_VERSION_TEXT } from '../version.js';

const hello = z.object({
  name: z.string().min(1, 'required').max(63).regex(/^[A-Za-z0-9_.\-]+$/, 'letters, digits and _ . - only'),
  labels: z.array(z.string().min(1).max(63).regex(/^[A-Za-z0-9_.\-]+$/, 'a label holds only letters, digits and _ . -')).max(64),
  inventory: z.object({
    cpus: z.number().int().min(0).max(MAX_CPUS),
    gpuIds: z.array(z.number().int().min(0).max(MAX_DEVICE_ID)).max(4096).refine((ids) => new Set(ids).size === ids.length, 'duplicate gpu ids'),
    ramMb: z.number().int().min(0).max(MAX_RAM_MB).optional(),
  }, { error: 'required' }),
  maxParallel: z.number().int().min(0).max(100_000),
  version: z.string().max(64),
});

const SNAKE: Record<string, string> = { gpuIds: 'gpu_ids', ramMb: 'ram_mb', maxParallel: 'max_parallel' };

/** Validates a Hello frame. @throws BerthError invalid_argument naming `hello.<field>`. */
export function parseHello(h: unknown): MachineSpec {
  const r = hello.safeParse(h);
  if (!r.success) {
    const issue = r.error.issues[0];
    let value: unknown = h;
    for (const k of issue.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[k as PropertyKey];
    throw new BerthError('invalid_argument', `hello.${issue.path.map((p) => SNAKE[String(p)] ?? String(p)).join('.')}: ${issue.message} (got ${JSON.stringify(value)})`);
  }
  const v = r.data;
  return { name: v.name, labels: v.labels, inventory: v.inventory, remote: true, maxParallel: v.maxParallel, version: v.version };
}

/** Builds the WorkerStream handler. */
export function workerStreamHandler(ctx: ServerContext) {
  const current = new Map<string, AbortController>();
  return bidiStream<WorkerStreamRequest, WorkerStreamResponse>(ctx, 'WorkerStream', async (messages, sink, signal) => {
    const it = messages[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done) return;
    if (first.value.frame?.$case !== 'hello') throw new BerthError('invalid_argument', `frame: the first frame must be hello (got ${first.value.frame?.$case ?? 'nothing'})`);
    const spec = parseHello(first.value.frame.value);
    if (spec.name === ctx.options.engineName) throw new BerthError('invalid_argument', `hello.name: '${spec.name}' is the engine's name`);
    current.get(spec.name)?.abort(new BerthError('unavailable', `worker ${spec.name} was replaced by a new stream`));
    const mine = new AbortController();
    current.set(spec.name, mine);
    ctx.placer.attach(spec);
    try {
      await sink.write({ frame: { $case: 'welcome', value: { serverVersion: SERVER_VERSION_TEXT, heartbeatMs: 2000 } } });
      const done = new Promise<void>((resolve) => mine.signal.addEventListener('abort', () => resolve(), { once: true }));
      for (;;) {
        const r = await Promise.race([it.next(), done.then(() => ({ done: true as const, value: undefined }))]);
        if (r.done) break;
      }
      if (mine.signal.aborted) throw mine.signal.reason;
    } finally {
      if (current.get(spec.name) === mine) {
        current.delete(spec.name);
        ctx.placer.detach(spec.name, `worker ${spec.name} went away`);
      }
    }
  });
}
