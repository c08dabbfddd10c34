/**
 * What the journal keeps (issue 19 item 4), one record per key: `worker/<name>` (a worker known),
 * `claim/<id>` (a claim held), `call/<id>` (a call in flight), `ended/<id>` (how an ended call
 * ended, kept for the retention period: one call id = one execution across restarts), `released/<id>` (how an
 * ended claim ended; the last two are the history, SPEC S9), `label/<label>` (when a worker carrying it last
 * left: its reconnect grace outlives a restart, SPEC P3) and `group/<id>` (a group held: every member in one
 * record, so it is restored whole or not at all, rule G7). Read back
 * at start through `parseRecords`, which refuses a record of the wrong shape naming its key.
 * Units: ms since the Unix epoch for times, ms for holds, cores, MB, named resources in units of 1e-4.
 */
import * as z from 'zod';
import { endingFields } from './ending.js';
import { HISTORY_STATES, type HistoryEntry } from './history.js';

/** Named resources or pools in units of 1e-4 (issue 23 item 1). */
const named = z.record(z.string(), z.number().int().nonnegative()).optional();

const inventory = z.object({
  cpus: z.number().int().nonnegative(),
  gpuIds: z.array(z.number().int().nonnegative()),
  ramMb: z.number().int().nonnegative().optional(),
  resources: named,
  gpuType: z.string().optional(),
  gpuNames: z.array(z.string()).optional(),
});

const worker = z.object({
  name: z.string().min(1),
  labels: z.array(z.string()),
  inventory,
  maxParallel: z.number().int().nonnegative(),
  version: z.string(),
  /** `<hostname>:<state dir>` of the agent (SPEC S5); '' for agents that send none. */
  agentId: z.string(),
  /** The agent instance last attached (SPEC S2): after a restart, the same instance re-binds its calls. */
  instanceId: z.string().optional(),
  at: z.number(),
});

const ask = z.object({
  cpus: z.number().nonnegative(),
  gpus: z.number().int().nonnegative(),
  ramMb: z.number().int().nonnegative().optional(),
  resources: named,
  pools: named,
  /** A GPU share in units of 1e-4 (SPEC P14) and the GPU type required (issue 23 items 3, 4). */
  gpuShare: z.number().int().min(1).max(9999).optional(),
  gpuType: z.string().optional(),
  label: z.string(),
  policy: z.enum(['prefer', 'require']),
  node: z.string(),
  runId: z.string(),
  env: z.record(z.string(), z.string()),
  owner: z.string().optional(),
  onOversize: z.enum(['clamp', 'fail']).optional(),
  holdMs: z.number().int().nonnegative().optional(),
});

/** Exactly what a claim holds: restored as it is (SPEC S4: nothing granted twice). */
const allocation = z.object({
  cpus: z.number().nonnegative(),
  gpuIds: z.array(z.number().int().nonnegative()),
  ramMb: z.number().int().nonnegative().optional(),
  resources: named,
  /** The share of gpuIds[0] held, in units of 1e-4 (SPEC P14). */
  gpuShare: z.number().int().min(1).max(9999).optional(),
  env: z.record(z.string(), z.string()),
});

const claim = z.object({
  claimId: z.string().min(1),
  machine: z.string().min(1),
  remote: z.boolean(),
  allocation,
  clamped: z.boolean(),
  fellBack: z.boolean(),
  ask,
  /** Hash of the claim's resume token (SPEC S3); '' when it has none. The token itself is never kept. */
  tokenHash: z.string(),
  /** The holder's own hold (Ask.hold_ms), 0 when none. */
  holdMs: z.number().int().nonnegative(),
  at: z.number(),
});

const group = z.object({
  groupId: z.string().min(1),
  strategy: z.enum(['pack', 'spread', 'strict_pack', 'strict_spread']),
  /** Every member, in the order asked: its claim id, machine and exactly what it holds. */
  members: z
    .array(z.object({ claimId: z.string().min(1), machine: z.string().min(1), remote: z.boolean(), allocation, ask }))
    .min(1),
  /** Hash of the group's resume token (rule G7); '' until its handler adds it. */
  tokenHash: z.string(),
  at: z.number(),
});

const call = z.object({
  callId: z.string().min(1),
  claimId: z.string(),
  machine: z.string(),
  runId: z.string(),
  at: z.number(),
  /** The Run's disconnect_grace_ms (SPEC S3), in ms; absent for none and in records of older servers. */
  callerGraceMs: z.number().int().min(0).optional(),
});

/** What a history entry adds to an ended call or claim (SPEC S9); optional: records of older servers lack it. */
const entryFacts = {
  node: z.string().optional(),
  state: z.enum(HISTORY_STATES).optional(),
  detail: z.string().optional(),
  startedAt: z.number().optional(),
  attempt: z.number().int().nonnegative().optional(),
};

const ended = z.object({
  callId: z.string().min(1),
  runId: z.string(),
  machine: z.string(),
  /** "result" | "failure" | "error" (call_finished's outcome). */
  outcome: z.string(),
  failureType: z.string().optional(),
  endedAt: z.number(),
  ...entryFacts,
  /** How it ended, for a follow after a restart (src/journal/ending.ts). */
  ...endingFields,
});

const released = z.object({
  claimId: z.string().min(1),
  runId: z.string(),
  machine: z.string(),
  /** claim_released's outcome ("released", "half_closed", "hold_ran_out", …) or "lost". */
  outcome: z.string(),
  endedAt: z.number(),
  ...entryFacts,
});

const label = z.object({
  label: z.string().min(1),
  /** When a worker carrying it last left for good (ms since the epoch): it is coming back for the reconnect grace. */
  goneAt: z.number(),
});

/** A label whose worker left: still coming back within the reconnect grace, after a restart too. */
export type LabelRecord = z.infer<typeof label>;
/** A worker the journal knows: restored as disconnected after a restart (SPEC S6). */
export type WorkerRecord = z.infer<typeof worker>;
/** A held claim: restored with exactly its allocation, awaiting its holder. */
export type ClaimRecord = z.infer<typeof claim>;
/** A held group, every member: restored whole or not at all, awaiting its holder (rule G7). */
export type GroupRecord = z.infer<typeof group>;
/** A call in flight. */
export type CallRecord = z.infer<typeof call>;
/** How an ended call ended, kept for the retention period. */
export type EndedRecord = z.infer<typeof ended>;

/** How an ended claim ended, kept for the retention period (SPEC S9). */
export type ReleasedRecord = z.infer<typeof released>;

/** Everything the journal held at start. */
export interface JournalState {
  workers: WorkerRecord[];
  claims: ClaimRecord[];
  calls: CallRecord[];
  ended: EndedRecord[];
  released: ReleasedRecord[];
  labels: LabelRecord[];
  groups: GroupRecord[];
}

/** Key prefixes, one per record kind. */
export const KEYS = {
  worker: (name: string) => `worker/${name}`,
  claim: (id: string) => `claim/${id}`,
  call: (id: string) => `call/${id}`,
  ended: (id: string) => `ended/${id}`,
  released: (id: string) => `released/${id}`,
  label: (name: string) => `label/${name}`,
  group: (id: string) => `group/${id}`,
} as const;

const SCHEMAS = { worker, claim, call, ended, released, label, group } as const;

/**
 * Sorts loaded records into a JournalState.
 * @throws Error `record <key>: <field>: <why>` for a record of the wrong shape or an unknown kind.
 */
export function parseRecords(entries: Iterable<[string, unknown]>): JournalState {
  const state: JournalState = { workers: [], claims: [], calls: [], ended: [], released: [], labels: [], groups: [] };
  for (const [key, value] of entries) {
    const kind = key.slice(0, key.indexOf('/')) as keyof typeof SCHEMAS;
    const schema = SCHEMAS[kind];
    if (!schema) throw new Error(`record ${key}: unknown kind '${kind}'`);
    const r = schema.safeParse(value);
    if (!r.success) {
      const issue = r.error.issues[0];
      throw new Error(`record ${key}: ${issue.path.join('.') || 'value'}: ${issue.message}`);
    }
    if (kind === 'worker') state.workers.push(r.data as WorkerRecord);
    else if (kind === 'claim') state.claims.push(r.data as ClaimRecord);
    else if (kind === 'call') state.calls.push(r.data as CallRecord);
    else if (kind === 'released') state.released.push(r.data as ReleasedRecord);
    else if (kind === 'label') state.labels.push(r.data as LabelRecord);
    else if (kind === 'group') state.groups.push(r.data as GroupRecord);
    else state.ended.push(r.data as EndedRecord);
  }
  return state;
}

/** The history entry of an ended call's or claim's record (what an older server did not write is guessed). */
export function entryOfRecord(r: EndedRecord | ReleasedRecord): HistoryEntry {
  const common = {
    runId: r.runId,
    node: r.node ?? '',
    machine: r.machine,
    detail: r.detail ?? '',
    startedAt: r.startedAt ?? r.endedAt,
    endedAt: r.endedAt,
  };
  if ('claimId' in r) {
    const state = r.state ?? (r.outcome === 'lost' ? 'lost' : 'released');
    return { kind: 'claim', id: r.claimId, ...common, state, failureType: '', outcome: r.outcome, attempt: 0 };
  }
  const state =
    r.state ??
    (r.outcome === 'result'
      ? 'succeeded'
      : r.outcome === 'lost'
        ? 'lost'
        : r.outcome === 'cancelled'
          ? 'cancelled'
          : 'failed');
  return {
    kind: 'call',
    id: r.callId,
    ...common,
    state,
    failureType: r.failureType ?? '',
    outcome: '',
    attempt: r.attempt ?? 1,
  };
}
