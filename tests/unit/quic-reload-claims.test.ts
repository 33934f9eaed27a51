/**
 * What the QUIC reload page says, held to its data: the recording of this
 * machine's kernel (public/traces/quic-reload.json, `reuseport-agent
 * scenario quic-reload`) and the model's run of the same script
 * (`quicReload`, in wasm, the page's own model). A new recording that moves
 * a count, or a change to the model that moves a datagram, fails here until
 * both languages say what the data says.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadLookupSync } from '../../src/model/lookup';
import { quicReload } from '../../src/model/pkg-lookup/reuseport.js';
import type { ReloadReport } from '../../src/model/generated/ReloadReport';
import { agreementOf, fateLines, type ReloadRecording } from '../../src/scene/quic-reload-view';

const wasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));
beforeAll(() => loadLookupSync(readFileSync(wasm)));

interface Run {
  variant: 'no-program' | 'cid-program';
  measured: ReloadReport;
  model: ReloadReport | null;
  compared: number;
  agreed: number;
}
interface Recording {
  schema: string;
  kernel: { release: string; profile: string };
  key: number | null;
  runs: Run[];
}
const rec = JSON.parse(readFileSync('public/traces/quic-reload.json', 'utf8')) as Recording;
const run = (v: Run['variant']) => rec.runs.find((r) => r.variant === v)!;
const page = (lang: string) => readFileSync(`content/${lang}/scenarios/11-quic-reload.md`, 'utf8').replace(/\s*\n\s*/g, lang === 'en' ? ' ' : '');
const en = page('en');
const zh = page('zh-CN');

describe('the recording', () => {
  it('found one key, and the model under it put every datagram of both variants where the kernel did', () => {
    expect(rec.schema).toBe('quic-reload-v1');
    expect(rec.key).not.toBeNull();
    for (const r of rec.runs) {
      expect(r.compared, r.variant).toBe(r.measured.datagrams.length);
      expect(r.agreed, r.variant).toBe(r.compared);
    }
  });

  it("the page's model is the recording's: quicReload under the recorded key gives every datagram the kernel gave", () => {
    for (const r of rec.runs) {
      const model = quicReload(r.measured.spec, rec.kernel.profile, rec.key!) as ReloadReport;
      expect(model.datagrams, r.variant).toEqual(r.measured.datagrams);
    }
  });
});

describe('the page says what the recording counted', () => {
  const no = run('no-program').measured.fates;
  const cid = run('cid-program').measured.fates;
  const total = rec.runs.reduce((a, r) => a + r.compared, 0);
  const agreed = rec.runs.reduce((a, r) => a + r.agreed, 0);

  it('the table, in both languages', () => {
    expect(en).toContain(`| flows established before the reload | ${no.before} | ${cid.before} |`);
    expect(en).toContain(`| of those, kept their worker during the drain | ${no.oldKept} | ${cid.oldKept} |`);
    expect(en).toContain(`(Initial at an old worker) | ${no.newHung} of 64 | ${cid.newHung} of 64 |`);
    const est = no.newEstablished;
    expect(en).toContain(`after the old sockets closed | ${no.afterKept} of ${est} | ${cid.afterKept} of ${cid.newEstablished} |`);
    expect(zh).toContain(`| 重载前建立的流 | ${no.before} | ${cid.before} |`);
    expect(zh).toContain(`| 其中排空期间仍留在原工作进程上的 | ${no.oldKept} | ${cid.oldKept} |`);
    expect(zh).toContain(`| 64 条中 ${no.newHung} 条 | 64 条中 ${cid.newHung} 条 |`);
    expect(zh).toContain(`| ${est} 条中 ${no.afterKept} 条 | ${cid.newEstablished} 条中 ${cid.afterKept} 条 |`);
  });

  it('the sentences: old flows kept and broken, new flows hung, flows broken after the drain', () => {
    expect(en).toContain(`here ${no.oldKept} of ${no.before}. The other ${no.oldBroken} break.`);
    expect(zh).toContain(`这里是 ${no.before} 条中的 ${no.oldKept} 条，其余 ${no.oldBroken} 条断了`);
    expect(en).toContain(`All ${cid.before} old flows keep their workers through the drain.`);
    expect(zh).toContain(`全部 ${cid.before} 条旧流在排空期间都留在原工作进程上`);
    expect(en).toContain(`(${cid.newHung} of 64 here)`);
    expect(zh).toContain(`（这里是 64 条中的 ${cid.newHung} 条）`);
    expect(en).toContain(`${cid.afterBroken} of ${cid.newEstablished} here.`);
    expect(zh).toContain(`这里是 ${cid.newEstablished} 条中的 ${cid.afterBroken} 条`);
  });

  it('the agreement figure', () => {
    const per = rec.runs[0]!.compared;
    expect(en).toContain(`**Agreement: ${agreed} of ${total} datagrams** (${per} per variant)`);
    expect(zh).toContain(`**一致程度：${total} 个数据报中 ${agreed} 个一致**（每种情况 ${per} 个）`);
  });
});

describe('what holds under any key (the model, twenty keys)', () => {
  const keys = Array.from({ length: 20 }, (_, i) => (Math.imul(i + 1, 0x9e3779b1) >>> 0) ^ 0x5eed);
  const fates = (cid: boolean, key: number) =>
    (quicReload({ workers: 4, flowsBefore: 64, flowsDuring: 64, cidProgram: cid, port: 4433, seed: 1 }, '6.18', key) as ReloadReport).fates;

  it('the program keeps all 64 old flows; without it about one in eight stays', () => {
    let kept = 0;
    for (const k of keys) {
      expect(fates(true, k).oldKept).toBe(64);
      kept += fates(false, k).oldKept;
    }
    // One in eight of 64 is 8; over twenty keys the mean stays within a few flows of it.
    expect(kept / keys.length).toBeGreaterThan(5);
    expect(kept / keys.length).toBeLessThan(11);
  });

  it('new flows hang alike with and without the program, and after the drain both break alike', () => {
    for (const k of keys) {
      const [a, b] = [fates(true, k), fates(false, k)];
      expect([a.newHung, a.afterKept, a.afterBroken]).toEqual([b.newHung, b.afterKept, b.afterBroken]);
    }
  });
});

describe("the card's rows (src/scene/quic-reload-view.ts)", () => {
  it('each row is a fate: simulated and kernel without a program, then with it; the agreement sums both variants', () => {
    const sim = { none: run('no-program').measured.fates, cid: run('cid-program').measured.fates };
    const lines = fateLines({ none: { ...sim.none, oldKept: 1 }, cid: sim.cid }, rec as unknown as ReloadRecording);
    const kept = lines.find((l) => l.fate === 'oldKept')!;
    expect(kept.values).toEqual([1, sim.none.oldKept, sim.cid.oldKept, sim.cid.oldKept]);
    expect(lines.map((l) => l.fate)).toEqual(['before', 'oldKept', 'oldBroken', 'newHung', 'newEstablished', 'afterKept', 'afterBroken']);
    expect(fateLines(sim, null)[0]!.values).toEqual([64, null, 64, null]);
    const a = agreementOf(rec as unknown as ReloadRecording);
    expect(a).toEqual({ compared: rec.runs[0]!.compared + rec.runs[1]!.compared, agreed: rec.runs[0]!.agreed + rec.runs[1]!.agreed });
  });
});
