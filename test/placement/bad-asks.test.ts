import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Ask, Policy } from '../../generated/ts/berth/v1/resources.js';
import { claim } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';
import { snapshot } from '../support/snapshot.js';

describe('bad asks are refused naming the field, and change nothing (SPEC R1)', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it.each<[string, Partial<Ask>, string]>([
    ['cpus of 10^9', { cpus: 1e9 }, 'ask.cpus'],
    ['gpus of 10^9', { gpus: 1e9 }, 'ask.gpus'],
    ['ram_mb beyond any machine', { ramMb: 4_000_000_000 }, 'ask.ram_mb'],
    ['unknown policy', { policy: 7 as Policy }, 'ask.policy'],
    ['label with spaces', { label: 'my gpu' }, 'ask.label'],
    ['env key with =', { env: { 'A=B': 'x' } }, 'ask.env'],
  ])('%s → INVALID_ARGUMENT naming %s', async (_name, a, field) => {
    t = await startServer({ cpus: 4 });
    const before = await snapshot(t.placement);
    const c = claim(t.placement, a);
    const err = await c.ended;
    expect(err?.code).toBe(status.INVALID_ARGUMENT);
    expect(err?.details).toContain(field);
    expect(await snapshot(t.placement)).toEqual(before);
  });

  it(
    'a second ask on one stream, or anything but release after the grant, ' +
      'is INVALID_ARGUMENT and gives the claim back',
    async () => {
      t = await startServer({ cpus: 4 });
      const before = await snapshot(t.placement);
      const c = claim(t.placement, { cpus: 2 });
      await c.granted;
      c.call.write({
        kind: {
          $case: 'ask',
          value: { gpus: 0, label: '', policy: 0, node: '', runId: '', env: {}, holdMs: 0, resources: {} },
        },
      });
      const err = await c.ended;
      expect(err?.code).toBe(status.INVALID_ARGUMENT);
      expect(err?.details).toContain('second ask');
      expect(await snapshot(t.placement)).toEqual(before);
    },
  );

  it('a first message that is not an ask is INVALID_ARGUMENT', async () => {
    t = await startServer({ cpus: 4 });
    const call = t.placement.claim();
    const err = await new Promise<{ code: number; details: string }>((resolve) => {
      call.on('error', resolve);
      call.on('data', () => {});
      call.write({ kind: { $case: 'release', value: {} } });
    });
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toContain('first message must be an ask');
  });
});
