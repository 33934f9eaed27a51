/**
 * Sentences readers met broken: a line error that named its format
 * as "an observed line" ("… is not a line of an observed line"), a Chinese one
 * with a space between two Chinese words ("地址对 的字段数不对"), "1 listening
 * sockets", and a pointer to "above" when nothing was above.
 */
import { describe, expect, it } from 'vitest';
import { say } from '../../src/model/messages';
import type { Format } from '../../src/model/generated/message/Format';
import { PASTE_TEXT } from '../../src/render/paste-text';

const FORMATS: Format[] = ['ss', 'netstat', 'conntrack', 'tcpdump', 'proc-net', 'csv', 'pairs', 'observed', 'page', 'bsd'];
/** Two Chinese characters (or Chinese punctuation) with a space between them. */
const CJK_GAP = /[\p{Script=Han}，。：；、（）“”] +[\p{Script=Han}，。：；、（）“”]/u;

describe('a line error names its format as a format, in both languages', () => {
  for (const f of FORMATS) {
    it(`${f}: "not a line of …" and "wrong number of fields" read as sentences`, () => {
      const en = PASTE_TEXT.en.formatWords[f]!;
      const zh = PASTE_TEXT.zh.formatWords[f]!;
      expect(en, 'an English name').toBeTruthy();
      expect(zh, 'a Chinese name').toBeTruthy();
      // "a line of a line" was the English bug: a format's name must not itself be "a line".
      expect(en).not.toMatch(/\bline\b/);
      const unrecognised = say('en', 'line_error', { kind: 'unrecognized', format: f, value: 'x y' } as never, { format: en });
      expect(unrecognised).toBe(`\`x y\` is not a line of ${en}`);
      const fields = say('zh-CN', 'line_error', { kind: 'fieldCount', format: f, found: 3 } as never, { format: zh });
      expect(fields.startsWith(zh), `${fields} starts with the format's Chinese name`).toBe(true);
      expect(fields).not.toMatch(CJK_GAP);
    });
  }

  it('keeps the space between a Latin word and a Chinese one ("ss 输出"), and drops the one between two Chinese words', () => {
    const ss = say('zh-CN', 'line_error', { kind: 'fieldCount', format: 'ss', found: 3 } as never, { format: 'ss 输出' });
    expect(ss).toBe('ss 输出的字段数不对：这一行有 3 个字段');
    const pairs = say('zh-CN', 'line_error', { kind: 'fieldCount', format: 'pairs', found: 3 } as never, { format: '地址对格式' });
    expect(pairs).toBe('地址对格式的字段数不对：这一行有 3 个字段');
  });
});

describe('counts in the paste summary agree with their nouns', () => {
  const s = { lines: 3, rows: 1, duplicates: 0, skipped: {}, listening: 1, bad: 0, undecided: 0 };
  it('one listening socket is "1 listening socket", two are "sockets"', () => {
    expect(PASTE_TEXT.en.lineCounts(s as never, (k) => k)).toContain(' 1 listening socket,');
    expect(PASTE_TEXT.en.lineCounts({ ...s, listening: 2 } as never, (k) => k)).toContain(' 2 listening sockets,');
  });
});

describe('the bars section points at a section that is there', () => {
  it('names the spread section when it shows, and points nowhere when it does not', () => {
    for (const t of [PASTE_TEXT.en, PASTE_TEXT.zh]) {
      expect(t.barsNeedSecret(t.spreadTitle)).toContain(t.spreadTitle);
      expect(t.barsNeedSecret(null)).not.toMatch(/above|上文|“/);
    }
  });
});
