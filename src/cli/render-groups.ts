/**
 * The groups section of `berth status` (docs/groups.md, rule G1): one line per group — its id, state, strategy and
 * time — then one row per member with its machine and GPU ids (held) or what it wants (waiting), and why a waiting
 * group waits. Nothing when no group is held or waiting.
 */
import { GroupStrategy, type GroupView } from '../../generated/ts/berth/v1/groups.js';
import { table } from '../format/table.js';
import { formatRange } from '../resources/ranges.js';

const STRATEGY: Record<number, string> = {
  [GroupStrategy.GROUP_STRATEGY_PACK]: 'PACK',
  [GroupStrategy.GROUP_STRATEGY_SPREAD]: 'SPREAD',
  [GroupStrategy.GROUP_STRATEGY_STRICT_PACK]: 'STRICT_PACK',
  [GroupStrategy.GROUP_STRATEGY_STRICT_SPREAD]: 'STRICT_SPREAD',
};

/** The lines of the groups section, starting with a blank line; empty when there are no groups. */
export function renderGroups(groups: GroupView[], secs: (ms: number) => string): string[] {
  if (groups.length === 0) return [];
  const out = ['', `groups: ${groups.length}`];
  for (const g of groups) {
    const strategy = STRATEGY[g.strategy] ?? 'PACK';
    out.push(
      `${g.groupId || '(another client)'}: ${g.state}, ${strategy}, ${g.members.length} member(s), ${secs(g.ms)}`,
    );
    if (g.state === 'waiting' && g.queued) out.push(`  waits: ${g.queued.detail}`);
    if (g.preemptedBy) out.push(`  PREEMPTED by ${g.preemptedBy}, ${secs(g.preemptLeftMs)} left`);
    const rows = g.members.map((m) => [
      String(m.index),
      m.machine || '-',
      String(m.allocation?.cpus ?? m.wanted?.cpus ?? 0),
      m.allocation ? formatRange(m.allocation.gpuIds) || '-' : `${m.wanted?.gpus ?? 0} wanted`,
    ]);
    out.push(
      ...table([['  MEMBER', 'MACHINE', 'CPUS', 'GPU IDS'], ...rows.map((r) => [`  ${r[0]}`, ...r.slice(1)])]).split(
        '\n',
      ),
    );
  }
  return out;
}
