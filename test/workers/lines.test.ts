/**
 * The line splitter and the outcome limits: long lines cut with a marker (memory bounded, UTF-8
 * kept whole), CRLF handled, results over the limit become ResultTooLarge.
 */
import { describe, expect, it } from 'vitest';
import { limitOutcome, MAX_FAILURE_TEXT_BYTES, MAX_RESULT_BYTES } from '../../src/workers/executors/limits.js';
import { clipText, cutMarker, LineSplitter } from '../../src/workers/executors/lines.js';

function split(chunks: Array<string | Buffer>, max?: number): string[] {
  const lines: string[] = [];
  const s = new LineSplitter((l) => lines.push(l), max);
  for (const c of chunks) s.push(typeof c === 'string' ? Buffer.from(c) : c);
  s.end();
  return lines;
}

describe('LineSplitter', () => {
  it('splits lines across chunks, drops CR of CRLF, keeps a last line without newline', () => {
    expect(split(['a\r\nb', 'c\n', '', 'tail'])).toEqual(['a', 'bc', 'tail']);
  });

  it('a line over the limit keeps its first bytes and says how many bytes were cut, arriving in many chunks', () => {
    const chunks = Array.from({ length: 10 }, () => 'x'.repeat(100));
    expect(split([...chunks, '\nnext\n'], 256)).toEqual(['x'.repeat(256) + cutMarker(744), 'next']);
  });

  it('never cuts inside a UTF-8 character', () => {
    const line = 'ab' + 'é'.repeat(10); // é is 2 bytes: a limit of 5 bytes would split the second é
    expect(split([Buffer.from(line + '\n').subarray(0, 7), Buffer.from(line + '\n').subarray(7)], 5)).toEqual([
      'abé' + cutMarker(18),
    ]);
  });

  it('a split multi-byte character across chunks decodes whole', () => {
    const b = Buffer.from('é\n');
    expect(split([b.subarray(0, 1), b.subarray(1)])).toEqual(['é']);
  });
});

describe('outcome limits', () => {
  it('a result over MAX_RESULT_BYTES becomes ResultTooLarge giving its size and the limit; one under passes', () => {
    const o = limitOutcome({ ok: true, value: 'y'.repeat(MAX_RESULT_BYTES + 10) });
    expect(o).toMatchObject({ ok: false, type: 'ResultTooLarge' });
    // the value plus a few bytes of tags and lengths
    expect(!o.ok && o.message).toMatch(/the result is 40000\d\d bytes encoded/);
    expect(!o.ok && o.message).toContain(`limit of ${MAX_RESULT_BYTES} bytes`);
    expect(limitOutcome({ ok: true, value: { a: [1, 2, 3] } })).toEqual({ ok: true, value: { a: [1, 2, 3] } });
  });

  it('failure message and traceback are cut with a marker', () => {
    const o = limitOutcome({
      ok: false,
      type: 'ValueError',
      message: 'm'.repeat(MAX_FAILURE_TEXT_BYTES + 5),
      traceback: 'tb',
    });
    expect(o).toEqual({
      ok: false,
      type: 'ValueError',
      message: 'm'.repeat(MAX_FAILURE_TEXT_BYTES) + cutMarker(5),
      traceback: 'tb',
    });
    expect(clipText('short', 3)).toBe('sho' + cutMarker(2));
    expect(clipText('short', 5)).toBe('short');
  });
});
