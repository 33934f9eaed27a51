/**
 * The accept-model exercise: its questions are the gallery's workloads with
 * a seed of their own, and every pair of choices it offers can be told apart
 * from what a question shows (the histogram's shape by the model's matcher,
 * wasted wake-ups, or the p99), on the runs the simulator actually makes.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { MODEL_POOL, modelQuestion, type ModelQuestion } from '../../src/islands/exercise-model';
import { loadLookupSync } from '../../src/model/lookup';
import { Simulation, curatedScenarios, rankScenarios } from '../../src/model/pkg-lookup/reuseport.js';
import type { CuratedView, Scenario, SimReport } from '../../src/model/sim';

const lookupWasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));
let curated: CuratedView[] = [];

beforeAll(() => {
  loadLookupSync(readFileSync(lookupWasm));
  curated = curatedScenarios() as CuratedView[];
});

function run(s: Scenario): SimReport {
  const sim = new Simulation(s);
  try {
    while (!sim.step(1_000_000));
    return sim.report() as SimReport;
  } finally {
    sim.free();
  }
}

const wasted = (r: SimReport) => r.workers.reduce((a, w) => a + Number(w.wastedWakeups), 0);

/** Why runs `a` and `b` look different to a learner, or null when they do not. */
function tellApart(a: SimReport, b: SimReport): string | null {
  const counts = a.workers.map((w) => Number(w.accepts));
  const { ranked } = rankScenarios({ counts }, [b]) as { ranked: { distance: number }[] };
  if (ranked[0]!.distance >= 0.1) return `shape distance ${ranked[0]!.distance.toFixed(2)}`;
  const [wa, wb] = [wasted(a), wasted(b)];
  if (Math.min(wa, wb) === 0 && Math.max(wa, wb) >= 20) return `wasted wake-ups ${wa} vs ${wb}`;
  const [pa, pb] = [a.requestLatency.p99Us, b.requestLatency.p99Us];
  if (Math.max(pa, pb) >= 3 * Math.min(pa, pb)) return `p99 ${pa} vs ${pb} µs`;
  return null;
}

describe('accept-model exercise', () => {
  it("asks about the gallery's own workloads, each choice as the gallery runs it, with the question's seed", () => {
    for (let i = 0; i < 12; i++) {
      const q = modelQuestion(curated, 5, i, '6.18');
      const view = curated.find((c) => c.name === q.scenario)!;
      expect(MODEL_POOL.map((p) => p.scenario)).toContain(q.scenario);
      expect(q.choices.map((v) => v.id)).toContain(q.expected);
      q.choices.forEach((v, k) => {
        const at = view.variants.findIndex((x) => x.id === v.id);
        expect(q.scenarios[k]).toEqual({ ...view.scenarios[at], seed: q.simSeed });
      });
    }
  });

  it('a seed gives the same questions, question i does not depend on the others, and 120 questions use every workload and answer', () => {
    const key = (q: ModelQuestion) => `${q.scenario}/${q.expected}/${q.simSeed}`;
    const a = Array.from({ length: 120 }, (_, i) => modelQuestion(curated, 11, i, '6.18'));
    expect(a.map(key)).toEqual(Array.from({ length: 120 }, (_, i) => key(modelQuestion(curated, 11, i, '6.18'))));
    expect(a.map(key)).not.toEqual(Array.from({ length: 120 }, (_, i) => key(modelQuestion(curated, 12, i, '6.18'))));
    const asked = new Set(a.map((q) => `${q.scenario}/${q.expected}`));
    for (const p of MODEL_POOL) for (const c of p.choices) expect(asked, `${p.scenario}/${c}`).toContain(`${p.scenario}/${c}`);
  });

  it('offers the choices in a drawn order, so the position of a button gives nothing away', () => {
    const qs = Array.from({ length: 60 }, (_, i) => modelQuestion(curated, 11, i, '6.18'));
    for (const p of MODEL_POOL) {
      const firsts = new Set(qs.filter((q) => q.scenario === p.scenario).map((q) => q.choices[0]!.id));
      expect(firsts.size, `${p.scenario}: first choices`).toBeGreaterThan(1);
      for (const q of qs.filter((x) => x.scenario === p.scenario)) expect([...q.choices.map((v) => v.id)].sort()).toEqual([...p.choices].sort());
    }
  });

  it('refuses a pool entry the model does not have, by name', () => {
    expect(() => modelQuestion([], 1, 0, '6.18')).toThrow(/no curated scenario named/);
  });

  it('every pair of choices offered differs in what the question shows, on 3 seeds of every workload', () => {
    const undecided: string[] = [];
    for (const p of MODEL_POOL) {
      const view = curated.find((c) => c.name === p.scenario)!;
      for (const seed of [1, 77, 4_000_000_001]) {
        const reports = p.choices.map((id) => run({ ...view.scenarios[view.variants.findIndex((v) => v.id === id)]!, seed }));
        for (let i = 0; i < reports.length; i++)
          for (let j = i + 1; j < reports.length; j++)
            if (tellApart(reports[i]!, reports[j]!) === null) undecided.push(`${p.scenario} seed ${seed}: ${p.choices[i]} vs ${p.choices[j]}`);
      }
    }
    expect(undecided).toEqual([]);
  }, 120_000);

  it('the pair left out of the shared-queue workload (blocking accept and plain epoll) cannot be told apart there: the reason it is left out', () => {
    const view = curated.find((c) => c.name === 'shared-queue-under-load')!;
    const at = (id: string) => ({ ...view.scenarios[view.variants.findIndex((v) => v.id === id)]!, seed: 1 });
    expect(tellApart(run(at('blocking')), run(at('epoll')))).toBeNull();
  }, 60_000);
});
