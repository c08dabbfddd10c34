import { describe, expect, it } from 'vitest';
import { BerthError } from '../../src/errors.js';
import { CallRecord, FLOW_HIGH, FLOW_LOW, MAX_REPLAY, type CallItem } from '../../src/workers/call-record.js';

const ev = (n: number) => ({
  callId: 'r:f.n',
  kind: { $case: 'log' as const, value: { stream: 'stdout', line: String(n) } },
  seq: n + 1,
});

async function drain(it: AsyncGenerator<CallItem>): Promise<CallItem[]> {
  const out: CallItem[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('a call record fans one call out to its followers', () => {
  it('a follower gets every event in order however many there are, then the result', async () => {
    const rec = new CallRecord('r:f.n', 'r', 'm', { cpus: 1, gpuIds: [], env: {}, resources: {} }, () => undefined);
    const got = drain(rec.follow(new AbortController().signal));
    const n = MAX_REPLAY * 3;
    for (let i = 0; i < n; i++) rec.event(ev(i));
    rec.finish({ $case: 'result', value: { callId: 'r:f.n', value: 1 } });
    const items = await got;
    expect(items).toHaveLength(n + 1);
    expect(
      items
        .slice(0, n)
        .every((x, i) => x.$case === 'event' && x.value.kind?.$case === 'log' && x.value.kind.value.line === String(i)),
    ).toBe(true);
    expect(items[n].$case).toBe('result');
  });

  it('a follower that joins late gets the last events kept and the same ending', async () => {
    const rec = new CallRecord('r:f.n', 'r', 'm', { cpus: 1, gpuIds: [], env: {}, resources: {} }, () => undefined);
    for (let i = 0; i < MAX_REPLAY + 5000; i++) rec.event(ev(i));
    const late = drain(rec.follow(new AbortController().signal));
    rec.fail(new BerthError('unavailable', 'worker m went away'));
    await expect(late).rejects.toMatchObject({ kind: 'unavailable' });
  });
});

describe('a call record is the Flow of an engine-host process', () => {
  it(
    'is full while its slowest follower lags FLOW_HIGH events, has room again at FLOW_LOW, ' +
      'and always once the call ends',
    async () => {
      const rec = new CallRecord('r:f.n', 'r', 'm', { cpus: 1, gpuIds: [], env: {}, resources: {} }, () => undefined);
      const it = rec.follow(new AbortController().signal);
      for (let i = 0; i < FLOW_HIGH; i++) rec.event(ev(i));
      expect(rec.full()).toBe(true);
      let room = false;
      void rec.room().then(() => (room = true));
      for (let i = 0; i < FLOW_HIGH - FLOW_LOW - 1; i++) await it.next();
      await Promise.resolve();
      expect(room).toBe(false);
      await it.next();
      await Promise.resolve();
      expect(room).toBe(true);
      expect(rec.full()).toBe(false);
      for (let i = 0; i < FLOW_HIGH; i++) rec.event(ev(i));
      const waiting = rec.room();
      rec.fail(new BerthError('unavailable', 'worker m went away'));
      await waiting; // an ended call never keeps a reader paused
      expect(rec.full()).toBe(false);
      await it.return(undefined);
    },
  );
});
