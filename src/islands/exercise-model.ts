/**
 * "Which accept model made this histogram?": the third exercise of
 * `<reuseport-exercise>` (`kind="model"`). A question is one curated
 * workload (the gallery's, `wasm/model/src/sim/curated.rs`) run by the
 * model's simulator under one accept model, with a seed of its own; the
 * learner sees the accepts per worker and three figures, and picks the
 * accept model from the workload's variants. After the answer, every
 * choice's run of the same workload and seed is shown beside it.
 *
 * Every count and figure is the simulator's; this file only draws the
 * question's inputs and lays out what the model reported.
 */
import type { CuratedView, Scenario, SimReport, SimSession, Variant } from '../model/sim';
import { renderWorkerBars } from '../render/scenario-charts';
import { tableElement } from '../render/table';
import { scenarioCards, type FigureKey, type VariantCard } from '../scene/scenario-view';
import { Rng, mix32 } from '../scene/dispatch/rng';
import { h } from './dom';
import type { ExerciseText } from './exercise-text';
import { formatFigure, variantTitle, type ScenarioText } from './scenario-text';

/**
 * The workloads asked about, each with the variants offered as choices. A
 * variant is left out where its run and another choice's cannot be told
 * apart from what the question shows (for example blocking accept() and
 * plain epoll under load: both even, both with wasted wake-ups); the unit
 * test `exercise-model.test.ts` checks that every pair offered differs.
 */
export const MODEL_POOL: readonly { scenario: string; choices: readonly string[] }[] = [
  { scenario: 'per-worker-queues-latency', choices: ['epoll-exclusive', 'blocking', 'reuseport'] },
  { scenario: 'long-lived-favourite', choices: ['epoll-exclusive', 'epoll', 'reuseport'] },
  { scenario: 'shared-queue-under-load', choices: ['epoll-exclusive', 'accept-mutex', 'reuseport'] },
  { scenario: 'slow-worker', choices: ['epoll-exclusive', 'reuseport', 'reuseport-least-loaded'] },
  { scenario: 'stalled-worker', choices: ['epoll-exclusive', 'reuseport', 'reuseport-least-loaded'] },
  { scenario: 'few-clients', choices: ['reuseport', 'epoll', 'reuseport-least-loaded'] },
];

/** The figures a question shows beside the histogram. */
export const MODEL_FIGURES: readonly FigureKey[] = ['maxShare', 'wasted', 'p99'];

/** One "which accept model made this histogram?" question. */
export interface ModelQuestion {
  kind: 'model';
  kernel: string;
  /** The curated workload's name. */
  scenario: string;
  /** The simulator's seed for every choice's run. */
  simSeed: number;
  /** The variants offered, in an order drawn per question (the pool's order would give the answer away: the same model first). */
  choices: Variant[];
  /** The variant whose run is shown (an id of `choices`). */
  expected: string;
  /** The workload as each choice runs it, in the order of `choices`. */
  scenarios: Scenario[];
  /** Filled by {@link runModelQuestion}: each choice's report, in the order of `choices`. */
  reports?: SimReport[];
}

/**
 * Question `index` of `seed`: the workload, the variant shown and the
 * simulator's seed are drawn; `curated` is the model's gallery.
 */
export function modelQuestion(curated: readonly CuratedView[], seed: number, index: number, kernel: string): ModelQuestion {
  const rng = new Rng(mix32(seed >>> 0, (0x3a7 + index) >>> 0));
  const pick = MODEL_POOL[rng.below(MODEL_POOL.length)]!;
  const view = curated.find((c) => c.name === pick.scenario);
  if (!view) throw new Error(`the model has no curated scenario named ${pick.scenario}`);
  const at = pick.choices.map((id) => {
    const i = view.variants.findIndex((v) => v.id === id);
    if (i < 0) throw new Error(`scenario ${pick.scenario} has no variant ${id}`);
    return i;
  });
  for (let k = at.length - 1; k > 0; k--) {
    const j = rng.below(k + 1);
    [at[k], at[j]] = [at[j]!, at[k]!];
  }
  const simSeed = rng.u32();
  const choices = at.map((i) => view.variants[i]!);
  return {
    kind: 'model',
    kernel,
    scenario: pick.scenario,
    simSeed,
    choices,
    expected: choices[rng.below(choices.length)]!.id,
    scenarios: at.map((i) => ({ ...view.scenarios[i]!, kernel: view.variants[i]!.kernel ?? kernel, seed: simSeed })),
  };
}

/** Runs every choice of `q` in the simulation worker (the shown one first); a Stop leaves `q.reports` unset. */
export async function runModelQuestion(q: ModelQuestion, session: SimSession, progress?: (done: number, total: number) => void): Promise<boolean> {
  const reports = await session.run(q.scenarios, (p) => progress?.(p.run, p.runs));
  if (reports.length < q.scenarios.length || reports.some((r) => r.partial)) return false;
  q.reports = reports;
  return true;
}

/** The card of each choice's run (in the order of `choices`). */
export function modelCards(q: ModelQuestion): VariantCard[] {
  return scenarioCards(q.choices, q.reports ?? []);
}

function figureTable(parent: HTMLElement, card: VariantCard, st: ScenarioText, lang: string): void {
  parent.append(
    tableElement({
      className: 'rl-sc-figures rl-ex-figures',
      rowHeads: true,
      rows: MODEL_FIGURES.map((key) => [st.figure[key], formatFigure(card.figures.find((x) => x.key === key)?.sim ?? 0, key, lang)]),
      data: (i) => ({ figure: MODEL_FIGURES[i]! }),
    }),
  );
}

/** The accepts per worker as a table: the chart's text equivalent. */
function countsTable(parent: HTMLElement, card: VariantCard, st: ScenarioText, caption: string): void {
  const det = parent.appendChild(h('details', 'rl-ex-counts'));
  det.append(h('summary', '', st.table));
  const wrap = det.appendChild(h('div', 'rl-ex-scroll'));
  // One column per worker: the rows are the workers' names and their accepts.
  wrap.append(
    tableElement({
      caption,
      rowHeads: true,
      rows: [
        [st.workerHead, ...card.workers.map((w) => st.worker(w.worker))],
        [st.accepts, ...card.workers.map((w) => ({ text: String(w.sim), className: 'rl-ex-count' }))],
      ],
    }),
  );
}

/** The question: the workload in one sentence, the histogram, its figures. */
export function describeModel(q: ModelQuestion, box: HTMLElement, t: ExerciseText, st: ScenarioText, lang: string): void {
  const s = q.scenarios[0]!;
  box.append(h('p', 'rl-ex-lead', t.workload(st.scenarioTitle[q.scenario] ?? q.scenario, s.workers, s.cpus, s.connections, q.kernel)));
  const seedNote = box.appendChild(h('p', 'rl-hint rl-ex-seed', t.simSeed(q.simSeed)));
  seedNote.dataset.scenario = q.scenario;
  seedNote.dataset.seed = String(q.simSeed);
  const shown = modelCards(q)[q.choices.findIndex((v) => v.id === q.expected)];
  if (!shown) return;
  const fig = box.appendChild(h('div', 'rl-ex-histogram'));
  renderWorkerBars(fig, shown.workers, { label: st.accepts, worker: st.worker });
  figureTable(box, shown, st, lang);
  countsTable(box, shown, st, st.accepts);
}

/** After the answer: the same workload and seed under every choice, the shown one marked, each with what gives it away. */
export function revealModel(q: ModelQuestion, parent: HTMLElement, t: ExerciseText, st: ScenarioText, lang: string): void {
  parent.append(h('p', 'rl-ex-note', t.sameWorkload));
  const grid = parent.appendChild(h('div', 'rl-ex-compare'));
  modelCards(q).forEach((card, i) => {
    const v = q.choices[i]!;
    const title = variantTitle(v, st);
    const cell = grid.appendChild(h('section', `rl-ex-compare-cell${v.id === q.expected ? ' rl-ex-shown' : ''}`, undefined, { 'aria-label': title }));
    cell.append(h('p', 'rl-ex-cell-title', title));
    if (v.id === q.expected) cell.append(h('p', 'rl-ex-chip rl-ex-shown-badge', t.shownRun));
    renderWorkerBars(cell, card.workers, { label: `${st.accepts}: ${title}`, worker: st.worker }, 300);
    figureTable(cell, card, st, lang);
    cell.append(h('p', 'rl-ex-tell', t.tell[v.accept]));
  });
}
