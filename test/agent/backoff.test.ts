/**
 * Reconnect backoff while calls are held (issue 19 target: with the defaults a 1 s link cut costs nothing): every
 * delay stays within 500 ms, so the link back is used inside the server's 2 s worker hold; idle agents keep the
 * longer backoff (SPEC W6). The bench measures the cut itself (`node bin/bench.js survival`).
 */
import { describe, expect, it } from 'vitest';
import { backoffDelay, DEFAULT_BACKOFF, heldBackoff } from '../../src/agent/backoff.js';

describe('reconnect backoff', () => {
  it('holding calls, every attempt comes within 500 ms of the last, whatever the jitter', () => {
    const held = heldBackoff(DEFAULT_BACKOFF);
    for (let attempt = 0; attempt < 40; attempt++)
      for (const r of [0, 0.5, 1]) expect(backoffDelay(attempt, held, () => r)).toBeLessThanOrEqual(500);
    // a cut of 1 s: the attempts add up past the cut well before the 2 s hold ends
    let t = 0;
    for (let attempt = 0; t <= 1000; attempt++) t += backoffDelay(attempt, held, () => 1);
    expect(t).toBeLessThanOrEqual(1500);
  });

  it('idle, the backoff still grows to 5 s (a server that is down is not hammered)', () => {
    expect(backoffDelay(10, DEFAULT_BACKOFF, () => 1)).toBe(5000);
    expect(heldBackoff({ baseMs: 50, capMs: 200 })).toEqual({ baseMs: 50, capMs: 200 }); // never longer than asked
  });
});
