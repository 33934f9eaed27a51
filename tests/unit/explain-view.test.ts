import { beforeAll, describe, expect, it } from 'vitest';
import { Group } from '../../src/model/index';
import { countByListener, explainView } from '../../src/scene/explain-view';
import { loadModelForTests } from './setup-model';

const T = { saddr: '127.0.0.9', sport: 40000, daddr: '127.0.0.1', dport: 8080 };

describe('explain view (scene, no DOM)', () => {
  beforeAll(loadModelForTests);

  it('shows the words the model fed to jhash and highlights the chosen slot', () => {
    const e = new Group('6.12', { proto: 'tcp', listeners: 8, bind: '127.0.0.1', port: 8080 }).explain(T);
    const v = explainView(e);
    expect(v.headline).toContain(`listener ${e.listener}`);
    expect(v.headline).toContain(e.hash.hashHex);
    const hash = v.sections.find((s) => s.title.startsWith('Hash'))!;
    // 127.0.0.1 and 127.0.0.9 as raw words, then 8080 << 16 | raw 40000.
    expect(hash.tables[0]!.rows.slice(0, 3).map((r) => r[1])).toEqual(['0100007f', '0900007f', '1f90409c']);
    const pick = v.sections[2]!;
    const steps = pick.tables[0]!;
    expect(steps.rows[steps.highlight!]![1]).toBe(String(e.listener));
    expect(pick.rows[1]!.value).toBe(`slot ${e.slot}`);
  });

  it('lays out the reservoir chain, newest first, for kernels before groups', () => {
    const e = new Group('3.9', { proto: 'tcp', listeners: 4, bind: '127.0.0.1', port: 8080, closed: [2] }).explain(T);
    const v = explainView(e);
    const chain = v.sections[2]!.tables[0]!;
    expect(chain.rows.map((r) => r[1])).toEqual(['3', '1', '0']);
    expect(chain.rows[chain.highlight!]![1]).toBe(String(e.listener));
    expect(v.slot).toBeNull();
  });

  it('lists a long chain up to a bound and says how many listeners it leaves out', () => {
    const n = 5000;
    const e = new Group('4.4', { proto: 'tcp', listeners: n, bind: '127.0.0.1', port: 8080 }).explain(T);
    const v = explainView(e);
    const section = v.sections[2]!;
    const chain = section.tables[0]!;
    // The first 256 positions in full, then only listeners that took the lead.
    expect(chain.rows.slice(0, 256).map((r) => r[0])).toEqual(Array.from({ length: 256 }, (_, i) => String(i)));
    expect(chain.rows.length).toBeLessThan(256 + 50);
    expect(chain.rows[chain.highlight!]![1]).toBe(String(e.listener));
    const notListed = section.rows.find((r) => r.label === 'Not listed')!;
    const omitted = Number(notListed.value.match(/^([\d,]+) listeners/)![1]!.replaceAll(',', ''));
    expect(chain.rows.length + omitted).toBe(n);
    expect(notListed.value).toContain('past the first 256');
  });

  it('shows a classic program run: each instruction taken with A and X, and how it ended', () => {
    // ld [0]; mod #4; ret a on payload word 7: instructions 0, 1, 2; A = 7, then 3.
    const program = {
      kind: 'cbpf' as const,
      insns: [
        [0x20, 0, 0, 0],
        [0x94, 0, 0, 4],
        [0x16, 0, 0, 0],
      ] as [number, number, number, number][],
    };
    const e = new Group('6.12', { proto: 'udp', listeners: 4, bind: '127.0.0.1', port: 8080, program }).explain(T, 0, 7);
    const section = explainView(e).sections.find((s) => s.title === 'Program attached to the group')!;
    expect(section.tables[0]!.rows).toEqual([
      ['0', '0x00000007', '0x00000000'],
      ['1', '0x00000003', '0x00000000'],
      ['2', '0x00000003', '0x00000000'],
    ]);
    expect(section.rows.find((r) => r.label === 'Ended')!.value).toBe('ret: returns 3');
    expect(e.slot).toBe(3);
    const zh = explainView(e, 'zh-CN').sections.find((s) => s.title === '挂在组上的程序')!;
    expect(zh.rows.find((r) => r.label === '结束方式')!.value).toBe('ret：返回 3');
  });

  it('counts connections per listener, none last', () => {
    expect(countByListener([2, 0, 2, null, 0, 2])).toEqual([
      { listener: 0, count: 2 },
      { listener: 2, count: 3 },
      { listener: null, count: 1 },
    ]);
  });
});
