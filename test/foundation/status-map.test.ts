import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { BerthError } from '../../src/errors.js';
import { MAX_DETAILS, toStatus } from '../../src/server/status.js';

describe('the one error → status mapper', () => {
  it('keeps a BerthError kind and message', () => {
    const s = toStatus(new BerthError('failed_precondition', "no machine carries label 'tpu'"));
    expect(s.code).toBe(status.FAILED_PRECONDITION);
    expect(s.details).toBe("no machine carries label 'tpu'");
  });

  it('hides an unexpected error behind UNKNOWN "internal error"', () => {
    const s = toStatus(new TypeError('secret internals at /srv/x.ts:12'));
    expect(s.code).toBe(status.UNKNOWN);
    expect(s.details).toBe('internal error');
  });

  it('caps a huge message (one echoing a big client value) so the status is not dropped in transit', () => {
    const s = toStatus(new BerthError('invalid_argument', `ask.env.X: too long (got "${'x'.repeat(100_000)}")`));
    expect(s.details.length).toBeLessThan(MAX_DETAILS + 100);
    expect(s.details).toMatch(/^ask\.env\.X: too long/);
    expect(s.details).toMatch(/more characters\)$/);
  });
});
