/**
 * Issue 9 item 3: a well-formed ask is validated without zod, and the precompiled check never
 * accepts what the schema of record (zod) refuses; bad asks still get zod's errors naming field and value.
 */
import { describe, expect, it } from 'vitest';
import { Policy, type Ask } from '../../generated/ts/berth/v1/resources.js';
import { BerthError } from '../../src/errors.js';
import { isWellFormedAsk, normalizeAsk, parseAsk } from '../../src/placement/ask.js';

const base: Ask = {
  cpus: 2,
  gpus: 1,
  ramMb: 512,
  label: 'gpu',
  policy: Policy.POLICY_PREFER,
  node: 'flow.node',
  runId: 'run-1',
  env: { XLA_FLAGS: '--x' },
  holdMs: 0,
  resources: {},
};

/** Values for each field: valid ones and every kind of bad one (bounds, types, characters). */
const VALUES: Record<keyof Omit<Ask, 'onOversize'>, unknown[]> = {
  cpus: [undefined, 0, 1, 65_536, 65_537, -1, 1.5, NaN, Infinity, '2', null],
  gpus: [0, 4, 4096, 4097, -1, 0.5, NaN, undefined, '1'],
  ramMb: [undefined, 0, 1 << 30, (1 << 30) + 1, -5, 2.5, NaN],
  label: ['', 'gpu', 'a'.repeat(63), 'a'.repeat(64), 'my gpu', 'x:y', 'ü', undefined, 7],
  policy: [0, 1, 2, 3, -1, 7, undefined, '1'],
  node: ['', 'a.b', 'n'.repeat(256), 'n'.repeat(257), 'sp ace', undefined],
  runId: ['', 'r:1.x-y_z', 'r'.repeat(128), 'r'.repeat(129), 'r 1', 'r/1', undefined],
  resources: [{}, { trainer: 1 }, { 'license/matlab': 0.25 }, { x: 0.00001 }, { 'bad name': 1 }, { t: -1 }],
  // undefined weighted: a share or a type takes the schema path, and the sample must keep plenty of fast asks
  gpuShare: [...Array(12).fill(undefined), 0, 0.5, 0.0001, 0.9999, 1, 1.5, 0.00005, -0.5, NaN, '0.5'],
  gpuType: [...Array(12).fill(undefined), '', 'a100', '1g.10gb', 'a b', 'x'.repeat(64), 7],
  priority: [...Array(40).fill(undefined), 0, 5, -5, 1e9, -1e9, 1e9 + 1, 1.5, NaN, '3'],
  priorityClass: [...Array(40).fill(undefined), '', 'urgent', 'a-b_c', '1x', 'a b', 'x'.repeat(64), 7],
  onPreempt: [...Array(8).fill(undefined), 0, 1, 2, 3, -1, 1.5, '1'],
  holdMs: [0, 1, 30_000, 3_600_000, 3_600_001, -1, 1.5, NaN, Infinity, '10', undefined, null],
  env: [
    {},
    { A: '' },
    { _a1: 'v' },
    { 'A=B': 'x' },
    { '1A': 'x' },
    { A: 'x\0y' },
    { A: 'v'.repeat(65_536) },
    { A: 'v'.repeat(65_537) },
    { A: 5 },
    [],
    null,
    undefined,
    Object.create(null),
  ],
};

/** A deterministic pseudo-random generator (mulberry32), so the sample is the same every run. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function schemaAccepts(a: Ask): boolean {
  try {
    parseAsk(a);
    return true;
  } catch (err) {
    if (!(err instanceof BerthError) || err.kind !== 'invalid_argument') throw err;
    return false;
  }
}

describe('ask validation fast path (issue 9)', () => {
  it(
    'on every single-field change and 5,000 random asks, the fast check accepts only what zod accepts, ' +
      'and both give the same ask',
    () => {
      const asks: Ask[] = [];
      for (const [k, vs] of Object.entries(VALUES)) for (const v of vs) asks.push({ ...base, [k]: v } as Ask);
      const r = rng(9);
      for (let i = 0; i < 5000; i++) {
        const a = { ...base } as Record<string, unknown>;
        for (const [k, vs] of Object.entries(VALUES)) if (r() < 0.3) a[k] = vs[Math.floor(r() * vs.length)];
        asks.push(a as unknown as Ask);
      }
      let fast = 0;
      for (const a of asks) {
        if (!isWellFormedAsk(a)) continue;
        fast++;
        expect(schemaAccepts(a), JSON.stringify(a)).toBe(true);
        expect(normalizeAsk(a)).toEqual(parseAsk(a));
      }
      expect(fast).toBeGreaterThan(500); // the sample holds plenty of well-formed asks
      expect(asks.filter((a) => !isWellFormedAsk(a) && !schemaAccepts(a)).length).toBeGreaterThan(500);
    },
  );

  it('a bad ask still gets the error naming the field and the value', () => {
    expect(() => normalizeAsk({ ...base, label: 'my gpu' })).toThrow(/ask\.label: .*\(got "my gpu"\)/);
    expect(() => normalizeAsk({ ...base, cpus: 65_537 }, 'placement.ask')).toThrow(
      /placement\.ask\.cpus: at most 65536 cores \(got 65537\)/,
    );
    expect(() => normalizeAsk({ ...base, env: { A: 'x\0y' } })).toThrow(
      /ask\.env\.A: an env value may not contain NUL/,
    );
    expect(() => normalizeAsk({ ...base, env: { 'A=B': 'x' } })).toThrow(/ask\.env: key "A=B" is not a variable name/);
    expect(() => normalizeAsk({ ...base, holdMs: 3_600_001 })).toThrow(
      /ask\.hold_ms: at most 3600000 ms \(one hour\) \(got 3600001\)/,
    );
    expect(normalizeAsk({ ...base, holdMs: 30_000 }).holdMs).toBe(30_000);
    expect(normalizeAsk(base).holdMs).toBeUndefined();
  });
});
