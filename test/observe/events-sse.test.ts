/**
 * Issue 13 item 3: the page's event feed (/api/events, Server-Sent Events from the event bus)
 * replays the recent events to a new reader, and after a reconnect (Last-Event-ID) only the ones
 * it has not seen.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { claim } from '../support/claims.js';
import { startServer, type TestServer } from '../support/server.js';

/** Reads SSE messages from /api/events until `watch_started`; returns [id, kind] of each. */
async function replay(url: string, headers: Record<string, string> = {}): Promise<[number, string][]> {
  const ac = new AbortController();
  const res = await fetch(`${url}/api/events`, { headers, signal: ac.signal });
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  const reader = res.body!.getReader();
  const seen: [number, string][] = [];
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended early: ${buf}`);
      buf += new TextDecoder().decode(value);
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const msg = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const id = Number(/^id: (\d+)$/m.exec(msg)?.[1]);
        const data = JSON.parse(/^data: (.*)$/m.exec(msg)![1]) as { kind: string };
        if (data.kind === 'watch_started') return seen;
        seen.push([id, data.kind]);
      }
    }
  } finally {
    ac.abort();
  }
}

describe('the status page event feed', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('replays recent events to a new page, and after Last-Event-ID only the newer ones', async () => {
    t = await startServer({ cpus: 2, flags: { metricsListen: '127.0.0.1:0' } });
    const c = claim(t.placement, { cpus: 1, node: 'sse.node' });
    await c.granted;
    await c.release();
    const url = t.server.observe!.url;
    const all = await replay(url);
    expect(all.map(([, k]) => k)).toEqual(['node_placed', 'claim_released']);
    const after = await replay(url, { 'last-event-id': String(all[0][0]) });
    expect(after).toEqual([all[1]]);
  });
});
