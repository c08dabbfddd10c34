import { describe, expect, it } from 'vitest';
import { formatRange, parseRange, RangeSpecError } from '../../src/resources/ranges.js';

describe('device range specs (SPEC D4)', () => {
  it.each([
    ['0', [0]],
    ['0-3', [0, 1, 2, 3]],
    ['0,2,5', [0, 2, 5]],
    ['0,2-4,7', [0, 2, 3, 4, 7]],
    [' 1 , 3 ', [1, 3]],
    ['3,1,1', [1, 3]],
    ['', []],
  ])('parses %j', (spec, ids) => {
    expect(parseRange(spec)).toEqual(ids);
  });

  it.each(['3-1', 'a', '-1', '1-', '1-2-3', '0,,1', '99999999'])('rejects %j naming the spec', (spec) => {
    expect(() => parseRange(spec)).toThrow(RangeSpecError);
    expect(() => parseRange(spec)).toThrow(`'${spec}'`);
  });

  it.each([
    [[0, 1, 2, 3], '0-3'],
    [[3, 2, 1, 0], '0-3'],
    [[4], '4'],
    [[0, 2, 5], '0,2,5'],
    [[0, 1, 3], '0,1,3'],
    [[], ''],
  ])('formats %j as %j', (ids, spec) => {
    expect(formatRange(ids)).toBe(spec);
  });

  it('round-trips: parse(format(x)) is sorted unique x', () => {
    for (const x of [[5, 1, 1, 2, 3], [9, 7, 8, 0], [2], [], [0, 1, 3, 4, 5, 10]]) {
      expect(parseRange(formatRange(x))).toEqual([...new Set(x)].sort((a, b) => a - b));
    }
  });
});
