/**
 * Priorities through the real server over gRPC (SPEC Q1, issue 22 item 1): the queue serves higher priority first,
 * then arrival; classes come from the config file's `priority_classes:` (a default class, re-read on reload, all or
 * nothing); bad priorities and unknown classes are INVALID_ARGUMENT naming the field; GetSnapshot lists waiting
 * claims in queue order with their priority, and `berth status` shows it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/render-status.js';
import { resolveServeOptions } from '../../src/config/serve-options.js';
import { runBerth } from '../support/cli.js';
import { claim, type ClaimHandle } from '../support/claims.js';
import { claimGroup } from '../support/groups.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';
import { until } from '../support/until.js';

let t: TestServer | undefined;
let dir: string | undefined;
const open: ClaimHandle[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) c.call.cancel();
  await t?.close();
  t = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

const CLASSES = `priority_classes:
  urgent: { value: 100 }
  sweep: { value: -10, default: true, preemption: never }
`;

/** Writes `text` as a config file in a temporary dir; returns its path. */
function configFile(text: string): string {
  dir ??= mkdtempSync(join(tmpdir(), 'berth-prio-'));
  const path = join(dir, 'berth.yaml');
  writeFileSync(path, text);
  return path;
}

const held = (a: Parameters<typeof claim>[1]) => {
  const c = claim(t!.placement, a);
  open.push(c);
  return c;
};

describe('priorities (SPEC Q1)', () => {
  it('an urgent claim arriving behind 100 waiting sweeps is granted first; equal priority stays in arrival order', async () => {
    t = await startServer({ cpus: 1 });
    const first = held({ cpus: 1, node: 'busy' });
    await first.granted;
    const sweeps = Array.from({ length: 100 }, (_, i) => held({ cpus: 1, node: `sweep.${i}` }));
    await Promise.all(sweeps.map((s) => s.queued));
    const urgent = held({ cpus: 1, node: 'urgent', priority: 10 });
    const q = await urgent.queued;
    expect(q.priority).toBe(10);
    expect(q.position).toBe(1); // ahead of all 100

    const s = await snapshot(t.placement);
    expect(s.waiting.map((w) => w.node).slice(0, 3)).toEqual(['urgent', 'sweep.0', 'sweep.1']);
    expect(s.waiting[0].priority).toBe(10);
    expect(renderStatus(s)).toMatch(/PRIORITY[\s\S]*\n\s*1\s+10\s+urgent/);

    await first.release();
    const g = await urgent.granted;
    expect(g.machine).toBe('engine');
    expect(sweeps.some((c) => c.responses.some((r) => r.kind?.$case === 'granted'))).toBe(false);
    // Within one priority, arrival order: each release grants the oldest sweep still waiting.
    await urgent.release();
    await sweeps[0].granted;
    await sweeps[0].release();
    await sweeps[1].granted;
    expect(sweeps.slice(2).some((c) => c.responses.some((r) => r.kind?.$case === 'granted'))).toBe(false);
  }, 30_000);

  it('a lower claim never takes room a higher waiter needs, but backfills what it does not', async () => {
    t = await startServer({ cpus: 4 });
    const hold = held({ cpus: 3, node: 'hold' });
    await hold.granted;
    const big = held({ cpus: 2, node: 'big', priority: 5 });
    await big.queued; // 1 core free, the 2-core urgent claim reserves it
    const low = held({ cpus: 1, node: 'low' });
    await low.queued; // the free core is held back for the higher waiter (P7 across priorities)
    const higher = held({ cpus: 1, node: 'higher', priority: 6 });
    expect((await higher.granted).machine).toBe('engine'); // a claim ahead of the reservation takes the core
    await hold.release();
    await big.granted;
    await low.granted; // 4 - 1 - 2 = 1 core for the low one
  }, 30_000);

  it('classes from the config: the default class applies, a named class its value; bad ones are INVALID_ARGUMENT', async () => {
    t = await startServer({ cpus: 1, flags: { config: configFile(CLASSES) } });
    const busy = held({ cpus: 1, node: 'busy' });
    expect((await busy.granted).machine).toBe('engine');
    const plain = held({ cpus: 1, node: 'plain' });
    const named = held({ cpus: 1, node: 'named', priorityClass: 'urgent' });
    const number = held({ cpus: 1, node: 'number', priority: 50 });
    await Promise.all([plain.queued, named.queued, number.queued]);
    const s = await snapshot(t.placement);
    expect(s.waiting.map((w) => [w.node, w.priority, w.priorityClass])).toEqual([
      ['named', 100, 'urgent'],
      ['number', 50, ''],
      ['plain', -10, 'sweep'],
    ]);
    const s2 = await snapshot(t.placement);
    expect(s2.held.find((h) => h.node === 'busy')?.priority).toBe(-10); // the default class, held

    const bad = async (a: Parameters<typeof claim>[1]) => {
      const c = held({ cpus: 1, ...a });
      return c.ended;
    };
    const unknown = await bad({ priorityClass: 'urgnet' });
    expect(unknown?.code).toBe(status.INVALID_ARGUMENT);
    expect(unknown?.details).toContain('ask.priority_class: unknown class "urgnet" (known: urgent, sweep)');
    const clash = await bad({ priorityClass: 'urgent', priority: 3 });
    expect(clash?.code).toBe(status.INVALID_ARGUMENT);
    expect(clash?.details).toContain('ask.priority: 3 disagrees with priority_class "urgent" (value 100)');
    const huge = await bad({ priority: 2_000_000_000 });
    expect(huge?.code).toBe(status.INVALID_ARGUMENT);
    expect(huge?.details).toContain('ask.priority: at most 1000000000 (got 2000000000)');
    expect((await snapshot(t.placement)).waiting).toHaveLength(3); // nothing changed
  }, 30_000);

  it('a config reload replaces the classes whole; a bad file changes nothing', async () => {
    const path = configFile(CLASSES);
    t = await startServer({ cpus: 1, flags: { config: path } });
    writeFileSync(path, `${CLASSES}  night: { value: -50 }\n`);
    t.server.reloadPriorityClasses();
    const busy = held({ cpus: 1, node: 'busy' });
    await busy.granted;
    const night = held({ cpus: 1, node: 'n', priorityClass: 'night' });
    expect((await night.queued).priority).toBe(-50);

    writeFileSync(path, 'priority_classes:\n  a: { value: 1, default: true }\n  b: { value: 2, default: true }\n');
    expect(() => t!.server.reloadPriorityClasses()).toThrow(/priority_classes\.b: only one default class \(also a\)/);
    const still = held({ cpus: 1, node: 'still', priorityClass: 'night' });
    expect((await still.queued).priority).toBe(-50); // the old classes stay
  }, 30_000);

  it('a group takes its turn by its own priority, ahead of lower single claims', async () => {
    t = await startServer({ cpus: 2 });
    const busy = held({ cpus: 2, node: 'busy' });
    await busy.granted;
    const singles = [0, 1, 2].map((i) => held({ cpus: 1, node: `single.${i}` }));
    await Promise.all(singles.map((c) => c.queued));
    const g = claimGroup(t.placement, [{ cpus: 1 }, { cpus: 1 }], undefined, undefined, { priority: 7 });
    await g.queued;
    const memberPrio = claimGroup(t.placement, [{ cpus: 1, priority: 3 }]);
    const refused = await memberPrio.ended;
    expect(refused?.code).toBe(status.INVALID_ARGUMENT);
    expect(refused?.details).toContain("members[0].priority: a member takes the group's priority");
    await busy.release();
    const grant = await g.granted;
    expect(grant.members).toHaveLength(2);
    expect(singles.some((c) => c.responses.some((r) => r.kind?.$case === 'granted'))).toBe(false);
    await g.release();
    await until(() => singles.filter((c) => c.responses.some((r) => r.kind?.$case === 'granted')).length === 2);
    g.call.cancel();
  }, 30_000);

  it.each([
    [
      'an unknown key in a class',
      'priority_classes:\n  a:\n    value: 1\n    prio: 2\n',
      /line 4: priority_classes\.a\.prio: unknown key \(known: value, default, preemption, tenants\)/,
    ],
    [
      'a value out of range',
      'priority_classes:\n  a: { value: 1e12 }\n',
      /line 2: priority_classes\.a\.value: at most 1000000000/,
    ],
    [
      'a bad preemption',
      'priority_classes:\n  a: { value: 1, preemption: always }\n',
      /priority_classes\.a\.preemption: expected lower or never \(got "always"\)/,
    ],
    [
      'a bad class name',
      'priority_classes:\n  "9x": { value: 1 }\n',
      /line 2: priority_classes\.9x: a class name: a letter, then letters, digits, _ and - \(at most 63\) \(got "9x"\)/,
    ],
  ])('the config file refuses %s, naming the line and the key', (_, text, want) => {
    expect(() => resolveServeOptions({ config: configFile(text) }, {})).toThrow(want);
  });

  it('berth serve with two default classes exits 2 naming the file, the line and both classes', async () => {
    const path = configFile('priority_classes:\n  a: { value: 1, default: true }\n  b: { value: 2, default: true }\n');
    const r = await runBerth(['serve', '--listen', '127.0.0.1:0', '--config', path]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/berth\.yaml line \d: priority_classes\.b: only one default class \(also a\)/);
  }, 30_000);
});
