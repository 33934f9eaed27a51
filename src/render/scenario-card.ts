/**
 * One variant's card of a scenario (src/scene/scenario-view.ts): accepts per
 * worker (shares beside the measured ones when this machine recorded the
 * scenario), the headline figures as a table, the calibration's verdict, the
 * queue depth and p99 latency over time, and the per-worker numbers as the
 * charts' text equivalent. Text only through textContent.
 */
import { type Agreement, type Verdict, verdictOf } from '../scene/scenario-verdict';
import type { FigureKey, VariantCard } from '../scene/scenario-view';
import { h } from './dom';
import { renderLines, renderWorkerBars } from './scenario-charts';
import { tableElement } from './table';

/** The card's words, in the page's language. */
export interface ScenarioCardText {
  partial: string;
  sharesLabel: string;
  accepts: string;
  simulated: string;
  measuredShort: string;
  worker: (n: number) => string;
  workerHead: string;
  figureHead: string;
  figure: Record<FigureKey, string>;
  ranAs: (cpus: number, connections: number, kernel: string) => string;
  wastedCounted: string;
  sharesVerdict: (v: Verdict['shares'], lang: string) => string;
  latencyVerdict: (v: Verdict['latency'], cpus: number, lang: string) => string;
  depth: string;
  p99: string;
  table: string;
}

/** What this machine recorded of the scenario, as the card shows it. */
export interface CardMeasured {
  /** The recording kernel's release. */
  kernel: string;
  /** The scenario each variant ran as (CPUs and connections adapted to this machine). */
  ranAs: Record<string, { cpus: number; connections: number }>;
  /** The calibration's agreement figures by variant id. */
  agreement: Record<string, Agreement>;
  thresholds: { share: number; latency: number } | null;
}

/** How a card is said: its title, its words, a figure's number in the page's language. */
export interface CardWords {
  title: string;
  text: ScenarioCardText;
  lang: string;
  figure: (v: number | null | undefined, key: FigureKey) => string;
}

/** Appends the card of `c` to `parent`. */
export function renderScenarioCard(parent: HTMLElement, c: VariantCard, w: CardWords, m: CardMeasured): void {
  const { text: t, lang, title } = w;
  const card = parent.appendChild(h('section', 'rl-sc-card'));
  card.setAttribute('aria-label', title);
  card.append(h('h3', 'rl-sc-variant', title));
  if (c.partial) card.append(h('p', 'rl-sc-partial', t.partial));
  const hasMeasured = c.workers.some((x) => x.measured !== undefined);
  const bars = card.appendChild(h('figure', 'rl-sc-fig'));
  bars.append(h('figcaption', '', hasMeasured ? t.sharesLabel : t.accepts));
  if (hasMeasured) {
    const key = bars.appendChild(h('p', 'rl-sc-key'));
    key.append(
      h('span', 'rl-sc-swatch rl-sc-sim'),
      document.createTextNode(t.simulated),
      h('span', 'rl-sc-swatch rl-sc-meas'),
      document.createTextNode(t.measuredShort),
    );
  }
  // Runs of different lengths compare as shares of their own totals.
  const share = (xs: (number | undefined)[]) => {
    const total = xs.reduce<number>((a, x) => a + (x ?? 0), 0) || 1;
    return (x: number | undefined) => (x === undefined ? undefined : (100 * x) / total);
  };
  const simShare = share(c.workers.map((x) => x.sim));
  const measShare = share(c.workers.map((x) => x.measured));
  const shown = hasMeasured ? c.workers.map((x) => ({ worker: x.worker, sim: simShare(x.sim)!, measured: measShare(x.measured) })) : c.workers;
  renderWorkerBars(bars, shown, { label: hasMeasured ? t.sharesLabel : t.accepts, worker: t.worker });
  const measuredCol = <T>(x: T): T[] => (hasMeasured ? [x] : []);
  card.append(
    tableElement({
      className: 'rl-sc-figures',
      head: [t.figureHead, t.simulated, ...measuredCol(t.measuredShort)],
      rowHeads: true,
      rows: c.figures.map((f) => [t.figure[f.key], w.figure(f.sim, f.key), ...measuredCol('measured' in f ? w.figure(f.measured, f.key) : '—')]),
    }),
  );
  const ran = m.ranAs[c.variant.id];
  if (hasMeasured && ran) card.append(h('p', 'rl-hint rl-sc-ran', t.ranAs(ran.cpus, ran.connections, m.kernel)));
  // The two counts of wasted wake-ups are of different things: say so beside them.
  if (c.figures.some((f) => f.key === 'wasted' && 'measured' in f)) card.append(h('p', 'rl-hint rl-sc-wasted', t.wastedCounted));
  const ag = m.agreement[c.variant.id];
  if (hasMeasured && ag && m.thresholds) {
    // A verdict per measure: shares that agree to a tenth of a percent are not "disagreeing" because a saturated
    // recording's latency differs.
    const v = verdictOf(ag, m.thresholds);
    const box = card.appendChild(h('div', 'rl-sc-verdict'));
    box.append(
      h('p', `rl-sc-agree ${v.shares.agrees ? 'rl-sc-yes' : 'rl-sc-no'}`, t.sharesVerdict(v.shares, lang)),
      h('p', `rl-sc-agree ${v.latency.agrees ? 'rl-sc-yes' : 'rl-sc-no'}`, t.latencyVerdict(v.latency, ran?.cpus ?? 0, lang)),
    );
  }
  const charts = card.appendChild(h('div', 'rl-sc-charts'));
  const depth = charts.appendChild(h('figure', 'rl-sc-fig'));
  depth.append(h('figcaption', '', t.depth));
  renderLines(depth, { series: c.depth, step: c.bucketMs, label: t.depth });
  const p99 = charts.appendChild(h('figure', 'rl-sc-fig'));
  p99.append(h('figcaption', '', t.p99));
  renderLines(p99, { series: [c.p99Ms], step: c.bucketMs, label: t.p99 });
  const det = card.appendChild(h('details', 'rl-sc-numbers'));
  det.append(h('summary', '', t.table));
  det.append(
    tableElement({
      caption: t.accepts,
      className: null,
      head: [t.workerHead, t.simulated, ...measuredCol(t.measuredShort)],
      rowHeads: true,
      rows: c.workers.map((x) => [t.worker(x.worker), x.sim.toLocaleString(lang), ...measuredCol(x.measured?.toLocaleString(lang) ?? '—')]),
    }),
  );
}
