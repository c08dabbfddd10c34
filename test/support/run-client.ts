/**
 * Test support: one Run RPC with the generated client, collecting what the caller sees.
 */
import type { ServiceError } from '@grpc/grpc-js';
import type { PlacementServiceClient, RunRequest, RunResponse } from '../../generated/ts/berth/v1/placement.js';
import { Policy, type Ask } from '../../generated/ts/berth/v1/resources.js';

/** What a Run caller saw: every response, and how the stream ended (null = OK). */
export interface RunOutcome {
  responses: RunResponse[];
  error: ServiceError | null;
}

/** A Run in progress. */
export interface RunHandle {
  responses: RunResponse[];
  done: Promise<RunOutcome>;
  cancel(): void;
}

/** Builds a RunRequest: an ask (default: require label `label`), a Python source payload. */
export function runRequest(o: {
  runId?: string;
  flow?: string;
  node?: string;
  label?: string;
  cpus?: number;
  gpus?: number;
  claimId?: string;
  source?: string;
  kwargs?: Record<string, unknown>;
  argv?: string[];
  timeoutMs?: number;
  policy?: Policy;
  /** The call's hold when its worker's link breaks, in ms (SPEC S2); default 0 (the server's). */
  disconnectGraceMs?: number;
  /** Times the call is placed again when its machine is lost (SPEC S8); default 0. */
  maxRetries?: number;
  /** Also retry the node's own failure (SPEC S8); default false. */
  retryOnFailure?: boolean;
}): RunRequest {
  const ask: Ask = {
    cpus: o.cpus,
    gpus: o.gpus ?? 0,
    label: o.label ?? '',
    policy: o.policy ?? (o.label ? Policy.POLICY_REQUIRE : Policy.POLICY_UNSPECIFIED),
    node: '',
    runId: '',
    env: {},
    holdMs: 0,
    resources: {},
  };
  return {
    placement: o.claimId ? { $case: 'claimId', value: o.claimId } : { $case: 'ask', value: ask },
    payload: o.argv
      ? { $case: 'command', value: { argv: o.argv, env: {}, cwd: '' } }
      : { $case: 'source', value: { source: o.source ?? 'def process():\n    return 1\n', kwargs: o.kwargs ?? {} } },
    flow: o.flow ?? 'flow',
    node: o.node ?? 'node',
    runId: o.runId ?? 'r1',
    timeoutMs: o.timeoutMs ?? 0,
    disconnectGraceMs: o.disconnectGraceMs ?? 0,
    maxRetries: o.maxRetries ?? 0,
    retryOnFailure: o.retryOnFailure ?? false,
    follow: undefined,
  };
}

/** Starts a Run. */
export function run(client: PlacementServiceClient, req: RunRequest): RunHandle {
  const call = client.run(req);
  const responses: RunResponse[] = [];
  call.on('data', (r: RunResponse) => responses.push(r));
  const done = new Promise<RunOutcome>((resolve) => {
    call.on('error', (e: ServiceError) => resolve({ responses, error: e }));
    call.on('status', (s) => {
      if (s.code === 0) resolve({ responses, error: null });
    });
  });
  return { responses, done, cancel: () => call.cancel() };
}

/** The kinds of responses in order, e.g. ['started', 'event', 'result']. */
export function kinds(o: { responses: RunResponse[] }): string[] {
  return o.responses.map((r) => r.kind?.$case ?? '?');
}

/** The terminal response's value. */
export function terminal(o: { responses: RunResponse[] }) {
  const last = o.responses[o.responses.length - 1]?.kind;
  return last?.$case === 'result' || last?.$case === 'failure' ? last : undefined;
}

/** Every output line the caller saw, in order, with batches (`logs` events) taken apart. */
export function outputLines(o: { responses: RunResponse[] }): { stream: string; line: string }[] {
  return o.responses.flatMap((r) => {
    const k = r.kind?.$case === 'event' ? r.kind.value.kind : undefined;
    if (k?.$case === 'log') return [k.value];
    if (k?.$case === 'logs') return k.value.lines.map((line) => ({ stream: k.value.stream, line }));
    return [];
  });
}
