/** The paste page's shareable URL: settings round-trip, bad values are named, large input is refused. */
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_URL_TEXT, readUrlState, writeUrlState } from '../../src/model/paste';
import { loadModelForTests } from './setup-model';

const PAGE = 'https://example.test/lookup/';

describe('paste URL state', () => {
  // The listeners bound is the model's (the largest group).
  beforeAll(loadModelForTests);

  it('round-trips every setting and a small input', () => {
    const state = {
      kernel: '4.18.0-513.el8',
      proto: 'udp',
      listeners: '130',
      closed: '3,0',
      bind: '[::1]:8080',
      format: 'ss',
      flip: true,
      secret: '0x1a2b3c4d',
      inner: '0x00000007',
      mode: 'typed',
      counts: '812, 790, 1630',
      text: 'ESTAB 0 0 10.0.0.1:8080 10.0.0.7:51234\nESTAB 0 0 10.0.0.1:8080 10.0.0.8:40000',
    };
    const url = writeUrlState(PAGE, state);
    expect(url).toBeDefined();
    const back = readUrlState(url!);
    expect(back.errors).toEqual([]);
    expect(back.state).toEqual(state);
  });

  it('leaves out empty settings and the secret-free mode', () => {
    const url = writeUrlState(PAGE, { kernel: '6.18', closed: '', flip: false, mode: 'none', text: null });
    expect(url).toBe(`${PAGE}?kernel=6.18`);
  });

  it('refuses an input too large for a link', () => {
    expect(writeUrlState(PAGE, { text: 'x'.repeat(MAX_URL_TEXT + 1) })).toBeUndefined();
    expect(writeUrlState(PAGE, { text: 'x'.repeat(MAX_URL_TEXT) })).toBeDefined();
  });

  it('names each bad parameter and keeps the good ones', () => {
    const bad = `${PAGE}?listeners=-1&proto=sctp&kernel=6.18&secret=zz&closed=1,,2&flip=yes&listeners2=3&counts=<script>&text=${'y'.repeat(MAX_URL_TEXT + 1)}`;
    const r = readUrlState(bad);
    expect(r.errors.map((e) => e.param).sort()).toEqual(['closed', 'counts', 'flip', 'listeners', 'proto', 'secret', 'text']);
    expect(r.state).toEqual({ kernel: '6.18' });
    // A long bad value is shown cut, never whole.
    expect(r.errors.find((e) => e.param === 'text')!.value.length).toBeLessThanOrEqual(41);
  });

  it('accepts the group size bounds of the form and nothing past them', () => {
    expect(readUrlState(`${PAGE}?listeners=32768`).errors).toEqual([]);
    expect(readUrlState(`${PAGE}?listeners=32769`).errors.map((e) => e.param)).toEqual(['listeners']);
    expect(readUrlState(`${PAGE}?listeners=0`).errors.map((e) => e.param)).toEqual(['listeners']);
  });
});
