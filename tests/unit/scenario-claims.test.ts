/**
 * What the scenario pages say about their cards, held to the data the cards
 * draw: the simulator's run as the widget makes it (the curated scenario,
 * seed 1, load 1), the recording of this machine
 * (public/traces/scenario-*.json) and the calibration
 * (public/traces/calibration.json). A page said "worker 0 accepts most of
 * them" beside 24% simulated and 34% measured, "many wake-ups that find
 * nothing" beside 1,787 simulated and 1 measured, and "Eight workers on eight
 * CPUs" above a recording made on 2; every card ended "They disagree" even
 * where the shares agreed exactly. A new recording or a change to the
 * simulator that breaks a sentence fails here until both languages say what
 * the data says.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadLookupSync } from '../../src/model/lookup';
import { Simulation, curatedScenarios } from '../../src/model/pkg-lookup/reuseport.js';
import type { CuratedView, Scenario, SimReport } from '../../src/model/sim';
import { saturatedRuns, verdictOf, type Agreement } from '../../src/scene/scenario-verdict';
import { SCENARIO_TEXT } from '../../src/islands/scenario-text';

const lookupWasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));
let curated: CuratedView[] = [];
beforeAll(() => {
  loadLookupSync(readFileSync(lookupWasm));
  curated = curatedScenarios() as CuratedView[];
});

/** The card's simulated run of `variant`: the curated scenario with the widget's default seed (1) and load (1). */
function simulated(name: string, variant: string): { scenario: Scenario; report: SimReport } {
  const view = curated.find((c) => c.name === name)!;
  const at = view.variants.findIndex((v) => v.id === variant);
  expect(at, `${name} has a ${variant} variant`).toBeGreaterThanOrEqual(0);
  const scenario = { ...view.scenarios[at]!, seed: 1 };
  const sim = new Simulation(scenario);
  try {
    while (!sim.step(1_000_000));
    return { scenario, report: sim.report() as SimReport };
  } finally {
    sim.free();
  }
}

interface Recording {
  nproc: number;
  scale: number;
  runs: { variant: string; scenario: Scenario; measured: SimReport }[];
}
const recording = (name: string) => JSON.parse(readFileSync(`public/traces/scenario-${name}.json`, 'utf8')) as Recording;
const run = (r: Recording, variant: string) => r.runs.find((x) => x.variant === variant)!;
const shares = (r: SimReport) => {
  const n = r.workers.map((w) => Number(w.accepts));
  const total = n.reduce((a, b) => a + b, 0);
  return n.map((x) => x / total);
};
const wasted = (r: SimReport) => r.workers.reduce((a, w) => a + Number(w.wastedWakeups), 0);
/** A page's text with its line breaks folded. */
const page = (lang: string, file: string) => readFileSync(`content/${lang}/scenarios/${file}`, 'utf8').replace(/\s*\n\s*/g, lang === 'en' ? ' ' : '');

describe('long-lived-favourite: the page says what its cards draw', () => {
  const en = page('en', '08-long-lived-favourite.md');
  const zh = page('zh-CN', '08-long-lived-favourite.md');
  const rec = recording('long-lived-favourite');

  it('eight workers on eight CPUs in the simulation; the recording on this 2-CPU machine with a quarter of the connections', () => {
    expect(en).toContain('Eight workers on eight CPUs in the simulation');
    expect(en).toContain("same load per CPU on this project's 2-CPU machine, with a quarter of the connections");
    expect(zh).toContain('模拟中，八个工作进程跑在八个 CPU 上');
    expect(zh).toContain('本项目的 2 CPU 机器上按相同的每 CPU 负载录制的，连接数是模拟的四分之一');
    const { scenario } = simulated('long-lived-favourite', 'epoll-exclusive');
    expect([scenario.workers, scenario.cpus]).toEqual([8, 8]);
    expect(rec.nproc).toBe(2);
    for (const r of rec.runs) {
      expect(r.scenario.cpus).toBe(2);
      expect(r.scenario.connections * 4).toBe(scenario.connections);
    }
  });

  it('EPOLLEXCLUSIVE: worker 0 takes the largest share, about a quarter simulated and a third measured, falling to almost nothing', () => {
    expect(en).toContain('worker 0 is usually asleep, so it accepts the largest share: about a quarter in the simulation, a third in the recording');
    expect(en).toContain('The share falls from worker to worker, and the last three get almost nothing');
    expect(zh).toContain('它接下的份额最大：模拟中约四分之一，实测中约三分之一。份额逐个递减，最后三个几乎分不到');
    const sim = shares(simulated('long-lived-favourite', 'epoll-exclusive').report);
    const meas = shares(run(rec, 'epoll-exclusive').measured);
    for (const [what, s, lo, hi] of [
      ['simulated', sim, 0.2, 0.3],
      ['measured', meas, 0.28, 0.4],
    ] as const) {
      expect(Math.max(...s), `${what}: worker 0 has the largest share`).toBe(s[0]);
      expect(s[0], `${what}: worker 0's share`).toBeGreaterThanOrEqual(lo);
      expect(s[0], `${what}: worker 0's share`).toBeLessThanOrEqual(hi);
      for (let w = 1; w < s.length; w++) expect(s[w]!, `${what}: w${w} no more than w${w - 1}`).toBeLessThanOrEqual(s[w - 1]! + 1e-9);
      for (const w of [5, 6, 7]) expect(s[w]!, `${what}: w${w} gets almost nothing`).toBeLessThan(0.06);
    }
  });

  it('plain epoll: more wasted wake-ups than connections simulated, only a few recorded', () => {
    expect(en).toContain('the simulation counts more of them than connections, the recording only the few that reach `accept()`');
    expect(zh).toContain('模拟中扑空的唤醒比连接还多，实测只数得到少数到达 `accept()` 的那几次');
    const { scenario, report } = simulated('long-lived-favourite', 'epoll');
    expect(wasted(report)).toBeGreaterThan(scenario.connections);
    const r = run(rec, 'epoll');
    expect(wasted(r.measured)).toBeLessThan(r.scenario.connections / 20);
  });
});

describe('fork-vs-reuseport: the figures quoted from the recording are the recording', () => {
  const en = page('en', '10-fork-vs-reuseport.md');
  const zh = page('zh-CN', '10-fork-vs-reuseport.md');
  const rec = recording('fork-vs-reuseport');
  const fmt = (v: number, d: number) => v.toFixed(d);

  it('wasted wake-ups: 529 for 12,000 connections, a floor', () => {
    const r = run(rec, 'epoll');
    expect(wasted(r.measured)).toBe(529);
    expect(r.scenario.connections).toBe(12_000);
    expect(en).toContain('(529 for 12,000 connections)');
    expect(zh).toContain('12,000 个连接只有 529 次');
    expect(en).toContain('The measured count is a floor.');
    expect(zh).toContain('实测值只是下限');
  });

  it("busiest ÷ quietest and Jain per variant, the busiest epoll worker, and the blocking run's SYN drops", () => {
    const sk = (v: string) => run(rec, v).measured.skew;
    const blocking = `busiest ÷ quietest worker ${fmt(sk('blocking').maxMin!, 2)}, Jain's index ${fmt(sk('blocking').jain, 3)}`;
    const reuse = `${fmt(sk('reuseport').maxMin!, 2)}, Jain's index ${fmt(sk('reuseport').jain, 3)}`;
    const busiest = Math.round(sk('epoll').maxShare * 100);
    const epoll = `plain epoll: ${Math.round(sk('epoll').maxMin!)}, Jain's index ${fmt(sk('epoll').jain, 2)}. One worker took ${busiest}%`;
    for (const s of [blocking, reuse, epoll]) expect(en).toContain(s);
    expect(zh).toContain(`最忙与最闲工作进程之比 ${fmt(sk('blocking').maxMin!, 2)}，Jain 指数 ${fmt(sk('blocking').jain, 3)}`);
    expect(zh).toContain(
      `普通 epoll：${Math.round(sk('epoll').maxMin!)}，Jain 指数 ${fmt(sk('epoll').jain, 2)}，一个工作进程拿走了全部连接的 ${Math.round(sk('epoll').maxShare * 100)}%`,
    );
    const drops = Number(run(rec, 'blocking').measured.outcomes.synDrops).toLocaleString('en');
    expect(en).toContain(`dropped ${drops} SYNs`);
    expect(zh).toContain(`丢弃了 ${drops} 个 SYN`);
  });
});

describe('a recorded card gives a verdict per measure, from the calibration', () => {
  const cal = JSON.parse(readFileSync('public/traces/calibration.json', 'utf8')) as {
    shareThreshold: number;
    latencyThreshold: number;
    leftOut: string[];
    runs: ({ scenario: string; variant: string } & Omit<Agreement, 'saturated'>)[];
  };
  const saturated = saturatedRuns(cal.leftOut);
  const thresholds = { share: cal.shareThreshold, latency: cal.latencyThreshold };

  it("reads the calibration's saturated runs (each named in leftOut as saturated)", () => {
    expect(saturated.size).toBe(cal.leftOut.filter((l) => l.includes('saturated')).length);
    expect(saturated.has('fork-vs-reuseport/reuseport')).toBe(true);
    expect(saturated.has('six-connections/blocking')).toBe(false);
  });

  it('agrees overall exactly where the calibration says so, and shares and latency part where they differ', () => {
    for (const r of cal.runs) {
      const v = verdictOf({ ...r, saturated: saturated.has(`${r.scenario}/${r.variant}`) }, thresholds);
      expect(v.shares.agrees && v.latency.agrees, `${r.scenario}/${r.variant}`).toBe(r.agrees);
    }
    // The case the issue met: shares within a tenth of a point, latency of a saturated run far off.
    const fork = cal.runs.find((r) => r.scenario === 'fork-vs-reuseport' && r.variant === 'reuseport')!;
    const v = verdictOf({ ...fork, saturated: true }, thresholds);
    expect(v.shares.agrees).toBe(true);
    expect(fork.shareError).toBeLessThan(0.001);
    const shared = cal.runs.find((r) => r.scenario === 'shared-queue-under-load' && r.variant === 'reuseport')!;
    const w = verdictOf({ ...shared, saturated: saturated.has('shared-queue-under-load/reuseport') }, thresholds);
    expect([w.shares.agrees, w.latency.agrees, w.latency.why]).toEqual([true, false, 'saturated']);
    const six = cal.runs.find((r) => r.scenario === 'six-connections' && r.variant === 'blocking')!;
    const x = verdictOf({ ...six, saturated: false }, thresholds);
    expect([x.shares.agrees, x.latency.agrees, x.latency.why]).toEqual([true, false, 'scheduler']);
  });

  it('says each verdict in both languages, with the figure and the reason', () => {
    const v = verdictOf({ shareError: 0.0034, latencyDistance: 0.81, agrees: false, saturated: true }, thresholds);
    expect(SCENARIO_TEXT.en.sharesVerdict(v.shares, 'en')).toBe(
      'Shares agree with the simulator on the same workload: 0.34 percentage points apart per worker on average (agreement: 10 or less).',
    );
    const lat = SCENARIO_TEXT.en.latencyVerdict(v.latency, 2, 'en');
    expect(lat).toContain('Latency differs: p50, p90 and p99 are 81% apart on average (agreement: 50% or less).');
    expect(lat).toContain('saturated the 2-CPU machine');
    expect(SCENARIO_TEXT.zh.sharesVerdict(v.shares, 'zh-CN')).toContain('份额与模拟器一致');
    expect(SCENARIO_TEXT.zh.latencyVerdict(v.latency, 2, 'zh-CN')).toContain('满负荷');
    for (const t of [SCENARIO_TEXT.en, SCENARIO_TEXT.zh])
      expect(`${t.sharesVerdict(v.shares, 'en')}${t.latencyVerdict(v.latency, 2, 'en')}`).not.toMatch(/disagree|两者不一致/);
  });
});
