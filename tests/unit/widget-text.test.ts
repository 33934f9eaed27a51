import { describe, expect, it } from 'vitest';
import { DISPATCH_TEXT } from '../../src/islands/dispatch-text';
import { LOOKUP_TEXT } from '../../src/islands/lookup-text';
import { PASTE_TEXT } from '../../src/render/paste-text';
import { SERVER_TEXT } from '../../src/islands/server-text';

const HAN = /[\u4e00-\u9fff]/;
/** Identifier-only strings (SK_REUSEPORT: SK_PASS) are Chinese-typeset by their full-width punctuation. */
const CHINESE = /[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]/;

/** Every leaf of a words object as [path, value] (functions called with sample arguments). */
function leaves(o: unknown, path = ''): [string, unknown][] {
  if (Array.isArray(o)) return o.flatMap((v, i) => leaves(v, `${path}[${i}]`));
  if (o && typeof o === 'object') return Object.entries(o).flatMap(([k, v]) => leaves(v, path ? `${path}.${k}` : k));
  return [[path, o]];
}

function keysOf(o: unknown, path = ''): string[] {
  if (o && typeof o === 'object' && !Array.isArray(o))
    return Object.entries(o)
      .flatMap(([k, v]) => [path + k, ...keysOf(v, `${path}${k}.`)])
      .sort();
  return [];
}

/** Arguments for the functions that take records rather than numbers and words. */
const summary = { lines: 10, rows: 5, duplicates: 1, skipped: { header: 1 }, listening: 0, bad: 1, undecided: 0 };
const SAMPLE: Record<string, unknown[]> = {
  lineCounts: [summary, (k: string) => k],
  decision: [{ basis: 'bind', port: 80, addr: null }, false],
  readStatus: [summary],
  answeredStatus: [summary, { listeners: 8, counts: [1], observed: null, unrouted: 1, disagree: 0 }, 'x'],
  spreadLead: [{ boots: 10, tuples: 3, listeners: 8, unrouted: 1 }],
  observedSkew: [{ observed: { maxMin: 2, jain: 0.9 }, maxMinPercentile: 50 }],
  barsLabel: [[1, 2, 3], { p5: 1, p95: 3, mean: 2 }],
  recovered: [
    {
      complete: true,
      seconds: 1,
      workers: 2,
      keysPerSecond: 1e9,
      candidates: 1,
      plan: { isa: 'simd128', expectedFalseMatches: 0.001, moreNeeded: null },
      leftOut: 0,
    },
  ],
  working: ['read', 1, 2],
  formatName: ['ss', true],
  formatWhy: [{ format: 'ss', columns: null, header: true, evidence: { sample: 10, read: 9, sockets: 8, names: 1, mixed: { format: 'netstat', lines: 1 } } }],
  sidesBy: [{ listening: 2, systemPort: 1 }],
  bandLine: [{ mean: 12.5, p5: 9, p95: 16 }],
  columnsTitle: [true],
  what: [{ kind: 'ack', listener: 6 }],
  readSockets: [{ snapshot: { listeners: [{}], connections: [{}, {}], proto: 'tcp', port: 80 }, listeningPorts: [22, 80], duplicates: 1, other: 1 }],
  countsVerdict: [{ verdict: 'beyond-hash', total: 10, workers: 2, expectedEmpty: 0.1, observed: { maxShare: 0.9 }, maxP999: 7, pValue: 0 }],
  countsShape: [{ shape: 'one-dominant' }],
  reason: [{ kind: 'ambiguous', candidates: 3, moreNeeded: 10 }],
  keyFound: ['0x5eedcafe', 120, 0.001],
  band: [23, 38, 4, 120],
  replayStatus: ['trace.json', '6.18', 0x5eedcafe, { records: 40, sent: 12, agreed: 11, disagreed: [3], unchecked: 0, hashDiffers: [] }],
  replayDiffers: [[3, 7], 40],
  replayCheck: [{ record: 3, kernel: 1, model: 2, kernelHash: null }],
  replayRefused: ['trace.json', '/group/bind', 'ipv6'],
  replayTooBig: ['trace.json', 12.5, 8],
  marker: [{ hash: { hashHex: '0x1234abcd' }, pick: { kind: 'by_hash', numSocks: 4, productHex: '0x00000001', scaled: 2 }, listener: 2 }],
};

describe.each([
  ['dispatch', DISPATCH_TEXT],
  ['lookup', LOOKUP_TEXT],
  ['paste', PASTE_TEXT],
  ['server', SERVER_TEXT],
] as const)('%s widget words', (_, { en, zh }) => {
  it('has the same keys in English and Chinese', () => {
    expect(keysOf(zh)).toEqual(keysOf(en));
    for (const [k, v] of leaves(en)) {
      const z = leaves(zh).find(([p]) => p === k);
      expect(z, k).toBeDefined();
      expect(typeof z![1], k).toBe(typeof v);
    }
  });

  it('says every fixed Chinese string in Chinese', () => {
    // Command names and command output read the same in every language.
    const same = new Set([
      '#',
      'CPU',
      'auto',
      'ss',
      'netstat',
      'conntrack',
      'tcpdump',
      'proc-net',
      'csv',
      'pairs',
      'observed',
      'page',
      'trace',
      'netstat -tn / -tun',
      'conntrack -L',
      '/proc/net/tcp',
      'CSV',
      'bind()',
      'listen()',
      PASTE_TEXT.en.placeholder,
      '?',
      ...PASTE_TEXT.en.roles.map(([key]) => key),
    ]);
    for (const [k, v] of leaves(zh)) {
      if (typeof v !== 'string' || same.has(v)) continue;
      expect(v, k).toMatch(CHINESE);
    }
  });

  it('says sentence functions in Chinese', () => {
    const zhFns = leaves(zh).filter(([, v]) => typeof v === 'function');
    expect(zhFns.length).toBeGreaterThan(0);
    for (const [k, fn] of zhFns) {
      // A worker's label and a slot number are names and numbers in every language.
      if (['summary', 'figures', 'headline', 'belongsTo', 'step', 'remap', 'chartLabel', 'worker', 'slot'].includes(k)) continue;
      const out = (fn as (...a: unknown[]) => unknown)(...(SAMPLE[k] ?? (k === 'clientListErrors' ? [['x']] : [3, 'x', 'y'])));
      expect(String(out), k).toMatch(HAN);
    }
  });
});
