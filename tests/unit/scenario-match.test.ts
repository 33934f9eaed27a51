/** The matcher form's reading of what the user typed: bounds, and the field named in each refusal. */
import { describe, expect, it } from 'vitest';
import { readObserved } from '../../src/islands/scenario-match';
import { SCENARIO_TEXT } from '../../src/islands/scenario-text';

const t = SCENARIO_TEXT.en.match;

describe('readObserved', () => {
  it('reads counts separated by spaces, commas and new lines, and optional latencies', () => {
    expect(readObserved('349, 17\n4 0', '', '', t)).toEqual({ observed: { counts: [349, 17, 4, 0] } });
    expect(readObserved('1 2', '0.5', '12', t)).toEqual({ observed: { counts: [1, 2], p50Ms: 0.5, p99Ms: 12 } });
  });

  it('names the count that is not a whole number, and cuts a long one short', () => {
    expect(readObserved('1 -2 3', '', '', t)).toMatchObject({ field: 'counts', error: expect.stringContaining('Count 2 (“-2”)') });
    const r = readObserved(`1 ${'9'.repeat(40)}`, '', '', t);
    expect(r).toMatchObject({ field: 'counts', error: expect.stringContaining('…') });
  });

  it('needs 2 to 4096 workers, and bounds the text', () => {
    expect(readObserved('5', '', '', t)).toMatchObject({ field: 'counts', error: t.countsCount(1) });
    expect(readObserved(Array(4097).fill('1').join(' '), '', '', t)).toMatchObject({ field: 'counts', error: t.countsCount(4097) });
    expect(readObserved('1 '.repeat(40_000), '', '', t)).toMatchObject({ field: 'counts' });
  });

  it('refuses a latency that is not a positive number, by field', () => {
    expect(readObserved('1 2', '0', '', t)).toMatchObject({ field: 'p50' });
    expect(readObserved('1 2', '', 'fast', t)).toMatchObject({ field: 'p99' });
  });
});
