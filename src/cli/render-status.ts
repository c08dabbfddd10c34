/**
 * Renders a GetSnapshot response as the text `berth status` prints: machines with their books (a disconnected
 * worker with its hold left, and named resources when any machine has some), the pools, waiting claims with their
 * reasons and wait times, held claims, groups with their members (rule G1) and calls in flight.
 */
import { MachineState, type GetSnapshotResponse, type Machine } from '../../generated/ts/berth/v1/placement.js';
import { table } from '../format/table.js';
import { formatRange } from '../resources/ranges.js';
import { printableDeep } from './printable.js';
import { renderGroups } from './render-groups.js';
import { renderTenants } from './render-tenants.js';
import { renderProvisioners } from './render-provisioners.js';
import { machineResources, renderPools } from './render-resources.js';

function headed(head: string[], rows: string[][]): string {
  return table([head, ...rows]);
}

/** Seconds with one decimal, e.g. "12.3s". */
function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/** engine, worker, or a held worker with its hold left: "worker (disconnected, 1.5s left)" (SPEC S2). */
function kindOf(m: Machine): string {
  if (!m.remote) return 'engine';
  return m.state === MachineState.MACHINE_STATE_DISCONNECTED
    ? `worker (disconnected, ${secs(m.holdLeftMs)} left)`
    : 'worker';
}

/** `0: 0.5, 3: 0.25`: each GPU held in shares and the share held, by id. */
function gpuShares(shares: Record<number, number>): string {
  return Object.keys(shares)
    .map(Number)
    .sort((a, b) => a - b)
    .map((id) => `${id}: ${shares[id]}`)
    .join(', ');
}

/** The full status text for snapshot `raw`; control characters in any text are shown escaped (printable.ts). */
export function renderStatus(raw: GetSnapshotResponse): string {
  const s = printableDeep(raw);
  const out: string[] = [];
  const c = s.cluster; // SPEC S7: only a leader answers, so this is the leader's view
  if (c) {
    const standbys = c.standbys.length ? c.standbys.join(', ') : 'none';
    out.push(`cluster ${c.name}: ${c.role} ${c.leader || '-'}, epoch ${c.epoch}; standbys: ${standbys}`, '');
  }
  // A RESOURCES column only when some machine has named resources (issue 23 item 1), e.g. "trainer 1/2".
  const named = s.machines.some((m) => Object.keys(m.total?.resources ?? {}).length > 0);
  // A GPU SHARES column only when some GPU is held in shares (SPEC P14), e.g. "0: 0.5, 3: 0.25".
  const shared = s.machines.some((m) => Object.keys(m.gpuShares ?? {}).length > 0);
  out.push(
    headed(
      [
        'MACHINE',
        'KIND',
        'LABELS',
        'CPUS FREE/TOTAL',
        'GPUS FREE/TOTAL',
        'FREE GPU IDS',
        ...(shared ? ['GPU SHARES HELD'] : []),
        'RAM MB FREE/TOTAL',
        ...(named ? ['RESOURCES FREE/TOTAL'] : []),
        'CLAIMS',
        'CALLS',
      ],
      s.machines.map((m) => [
        m.name,
        kindOf(m),
        m.labels.join(',') || '-',
        `${m.free?.cpus ?? 0}/${m.total?.cpus ?? 0}`,
        `${m.free?.gpus ?? 0}/${m.total?.gpuIds.length ?? 0}`,
        formatRange(m.freeGpuIds) || '-',
        ...(shared ? [gpuShares(m.gpuShares ?? {}) || '-'] : []),
        m.total?.ramMb === undefined ? 'unlimited' : `${m.free?.ramMb ?? 0}/${m.total.ramMb}`,
        ...(named ? [machineResources(m) || '-'] : []),
        String(m.claims),
        m.maxParallel ? `${m.runningCalls}/${m.maxParallel}` : String(m.runningCalls),
      ]),
    ),
  );
  out.push(...renderPools(s.pools));
  out.push(...renderTenants(s.tenants ?? []));
  out.push('');
  if (s.waiting.length === 0) out.push('waiting: none');
  else {
    out.push(`waiting: ${s.waiting.length}`);
    // Priorities (SPEC Q1) add a PRIORITY column when any waiting claim has one: the value, and its class if named.
    const prio = s.waiting.some((w) => w.priority || w.priorityClass);
    const prioText = (w: (typeof s.waiting)[number]) =>
      `${w.priority}${w.priorityClass ? ` (${w.priorityClass})` : ''}`;
    out.push(
      headed(
        ['#', ...(prio ? ['PRIORITY'] : []), 'NODE', 'RUN', 'WAITS FOR', 'BEST MACHINE (FREE)', 'ABLE', 'WAITED'],
        s.waiting.map((w) => [
          String(w.reason?.position ?? ''),
          ...(prio ? [prioText(w)] : []),
          w.node || w.claimId,
          w.runId || '-',
          // a claim waiting for a label says so (issue 13)
          `${w.reason?.detail ?? ''}${w.label ? ` with label ${w.label}` : ''}`,
          w.reason?.bestMachine
            ? `${w.reason.bestMachine} (${w.reason.bestFree?.cpus ?? 0} cpu, ${w.reason.bestFree?.gpus ?? 0} gpu)`
            : '-',
          String(w.reason?.machinesAble ?? 0),
          secs(w.waitedMs),
        ]),
      ),
    );
  }
  out.push('');
  if (s.held.length === 0) out.push('held: none');
  else {
    out.push(`held: ${s.held.length}`);
    // Claims whose holder's stream broke (SPEC S3) add a HOLDER column: how long each still awaits its holder.
    const awaiting = s.held.some((h) => h.awaitingHolder);
    const heldPrio = s.held.some((h) => h.priority);
    // Claims being preempted (SPEC Q2) add a PREEMPTED column: by which claim, and the grace left.
    const preempted = s.held.some((h) => h.preemptedBy);
    out.push(
      headed(
        [
          'CLAIM',
          ...(heldPrio ? ['PRIORITY'] : []),
          'NODE',
          'MACHINE',
          'CPUS',
          'GPU IDS',
          'HELD',
          ...(awaiting ? ['HOLDER'] : []),
          ...(preempted ? ['PREEMPTED'] : []),
        ],
        s.held.map((h) => [
          h.claimId,
          ...(heldPrio ? [String(h.priority)] : []),
          h.node || '-',
          h.machine,
          String(h.allocation?.cpus ?? 0),
          formatRange(h.allocation?.gpuIds ?? []) || '-',
          secs(h.heldMs),
          ...(awaiting ? [h.awaitingHolder ? `awaiting, ${secs(h.holdLeftMs)} left` : 'connected'] : []),
          ...(preempted ? [h.preemptedBy ? `by ${h.preemptedBy}, ${secs(h.preemptLeftMs)} left` : '-'] : []),
        ]),
      ),
    );
  }
  out.push(...renderGroups(s.groups ?? [], secs));
  out.push('');
  if (s.calls.length === 0) out.push('calls in flight: none');
  else {
    out.push(`calls in flight: ${s.calls.length}`);
    out.push(
      headed(
        ['CALL', 'MACHINE', 'ELAPSED'],
        s.calls.map((c) => [c.callId, c.machine, secs(c.elapsedMs)]),
      ),
    );
  }
  out.push(...renderProvisioners(s.provisioners));
  return out.join('\n');
}
