/**
 * One scenario of the gallery, simulated: `<reuseport-scenario
 * name="stalled-worker" seed="1" load="1">`. Every variant of the curated
 * scenario runs over the same workload in a Web Worker (the model's
 * simulator), with progress and Stop; each gets a card with accepts per
 * worker, the headline figures, and queue depth and p99 latency over time.
 * Where this machine recorded the scenario (public/traces/scenario-NAME.json,
 * `reuseport-agent scenario NAME`), the measured figures stand beside the
 * simulated ones.
 *
 * Events: `reuseport:started` `{name, seed, load}`, `reuseport:completed`
 * `{name, partial, variants}`, `reuseport:error` `{message}`.
 */
import { SimSession, type CuratedView, type Scenario, type SimReport } from '../model/sim';
import { renderLines, renderWorkerBars } from '../render/scenario-charts';
import { tableElement } from '../render/table';
import { type Agreement, saturatedRuns, verdictOf } from '../scene/scenario-verdict';
import { scenarioCards, type VariantCard } from '../scene/scenario-view';
import { defineIsland, emit, hostOf, islandElement, provideSettings } from './element';
import { formatFigure, scenarioText, variantTitle, type ScenarioText } from './scenario-text';
import { h, runStatus } from './dom';
import { pageLang, siteUrl } from './site';

export interface ScenarioOptions {
  name: string;
  /** @default 1 */
  seed?: number;
  /** Arrival rate multiplier, 0.1 to 4. @default 1 */
  load?: number;
}

/** The workload at `load` times its arrival rate, with `seed`. */
function scaled(s: Scenario, seed: number, load: number): Scenario {
  const a = s.arrivals;
  const arrivals =
    a.kind === 'poisson' || a.kind === 'bursty' ? { ...a, ratePerSec: a.ratePerSec * load } : a.kind === 'paced' ? { ...a, gapUs: a.gapUs / load } : a;
  return { ...s, seed, arrivals };
}

/** A recording of this machine: measured reports by variant id, the workload as run, and the calibration's agreement figures. */
interface Measured {
  kernel: string;
  byVariant: Record<string, SimReport>;
  /** The scenario each variant ran as (CPUs and connections adapted to this machine). */
  ranAs: Record<string, { cpus: number; connections: number }>;
  agreement: Record<string, Agreement>;
  thresholds: { share: number; latency: number } | null;
}

const NONE: Measured = { kernel: '', byVariant: {}, ranAs: {}, agreement: {}, thresholds: null };

/** The agent's scenario trace and the calibration's figures for it, or nothing when the manifest lists no recording. */
async function measuredOf(name: string, el: HTMLElement): Promise<Measured> {
  try {
    // Only a recording the manifest lists is fetched: no request fails for a scenario not recorded yet.
    const file = `scenario-${name}.json`;
    const list = await fetch(siteUrl('traces/manifest.json', false, el));
    const manifest = list.ok ? ((await list.json()) as { traces?: { file?: string }[] }) : {};
    if (!manifest.traces?.some((t) => t.file === file)) return NONE;
    const res = await fetch(siteUrl(`traces/${file}`, false, el));
    if (!res.ok) return NONE;
    const j = (await res.json()) as { kernel?: { release?: string }; runs?: { variant: string; measured: SimReport; scenario?: Scenario }[] };
    const out: Measured = { ...NONE, byVariant: {}, ranAs: {}, agreement: {}, kernel: j.kernel?.release ?? '' };
    for (const r of j.runs ?? []) {
      if (!r || typeof r.variant !== 'string' || !r.measured?.workers) continue;
      out.byVariant[r.variant] = r.measured;
      if (r.scenario) out.ranAs[r.variant] = { cpus: r.scenario.cpus, connections: r.scenario.connections };
    }
    if (manifest.traces?.some((t) => t.file === 'calibration.json')) {
      const cal = await fetch(siteUrl('traces/calibration.json', false, el));
      if (cal.ok) {
        const c = (await cal.json()) as {
          shareThreshold: number;
          latencyThreshold: number;
          leftOut?: string[];
          runs: ({ scenario: string; variant: string } & Omit<Agreement, 'saturated'>)[];
        };
        out.thresholds = { share: c.shareThreshold, latency: c.latencyThreshold };
        const saturated = saturatedRuns(c.leftOut ?? []);
        for (const r of c.runs ?? [])
          if (r.scenario === name)
            out.agreement[r.variant] = {
              shareError: r.shareError,
              latencyDistance: r.latencyDistance,
              agrees: r.agrees,
              saturated: saturated.has(`${r.scenario}/${r.variant}`),
            };
      }
    }
    return out;
  } catch {
    return NONE;
  }
}

function renderCard(parent: HTMLElement, c: VariantCard, t: ScenarioText, lang: string, m: Measured): void {
  const measuredKernel = m.kernel;
  const card = parent.appendChild(h('section', 'rl-sc-card'));
  const title = variantTitle(c.variant, t);
  card.setAttribute('aria-label', title);
  card.append(h('h3', 'rl-sc-variant', title));
  if (c.partial) card.append(h('p', 'rl-sc-partial', t.partial));
  const hasMeasured = c.workers.some((w) => w.measured !== undefined);
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
  const simShare = share(c.workers.map((w) => w.sim));
  const measShare = share(c.workers.map((w) => w.measured));
  const shown = hasMeasured ? c.workers.map((w) => ({ worker: w.worker, sim: simShare(w.sim)!, measured: measShare(w.measured) })) : c.workers;
  renderWorkerBars(bars, shown, { label: hasMeasured ? t.sharesLabel : t.accepts, worker: t.worker });
  const measuredCol = <T>(x: T): T[] => (hasMeasured ? [x] : []);
  card.append(
    tableElement({
      className: 'rl-sc-figures',
      head: [t.figureHead, t.simulated, ...measuredCol(t.measuredShort)],
      rowHeads: true,
      rows: c.figures.map((f) => [
        t.figure[f.key],
        formatFigure(f.sim, f.key, lang),
        ...measuredCol('measured' in f ? formatFigure(f.measured, f.key, lang) : '—'),
      ]),
    }),
  );
  const ran = m.ranAs[c.variant.id];
  if (hasMeasured && ran) card.append(h('p', 'rl-hint rl-sc-ran', t.ranAs(ran.cpus, ran.connections, measuredKernel)));
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
      rows: c.workers.map((w) => [t.worker(w.worker), w.sim.toLocaleString(lang), ...measuredCol(w.measured?.toLocaleString(lang) ?? '—')]),
    }),
  );
}

async function mountScenario(el: HTMLElement, o: ScenarioOptions): Promise<() => void> {
  const lang = pageLang(el);
  const t = scenarioText(lang);
  const root = el.appendChild(h('div', 'rl-sc'));
  const session = new SimSession();
  let seed = o.seed ?? 1;
  let load = o.load ?? 1;
  const form = root.appendChild(h('form', 'rl-sc-controls'));
  form.noValidate = true;
  const field = (label: string, value: string, hint?: string) => {
    const id = `rl-sc-${Math.random().toString(36).slice(2, 8)}`;
    const wrap = form.appendChild(h('div', 'rl-sc-field'));
    wrap.append(h('label', '', label, { for: id }));
    const input = wrap.appendChild(h('input', '', '', { id, inputmode: 'decimal', value, size: '8' }));
    if (hint) {
      input.setAttribute('aria-describedby', `${id}-hint`);
      wrap.append(h('span', 'rl-hint', hint, { id: `${id}-hint` }));
    }
    return input;
  };
  const seedIn = field(t.seed, String(seed));
  const loadIn = field(t.load, String(load), t.loadHint);
  const runBtn = form.appendChild(h('button', 'rl-primary', t.run, { type: 'submit' }));
  const stopBtn = form.appendChild(h('button', '', t.stop, { type: 'button' }));
  stopBtn.hidden = true;
  const { status, bar, error } = runStatus(root);
  const note = root.appendChild(h('p', 'rl-hint rl-sc-note'));
  const grid = root.appendChild(h('div', 'rl-sc-grid'));
  provideSettings(el, () => ({ name: o.name, seed: String(seed), load: String(load) }));

  let view: CuratedView | undefined;
  let running = false;
  const measured = measuredOf(o.name, el);

  async function run(): Promise<void> {
    if (!view || running) return;
    running = true;
    let failed = false;
    runBtn.disabled = true;
    stopBtn.hidden = false;
    bar.hidden = false;
    error.hidden = true;
    emit(el, 'started', { name: o.name, seed, load });
    hostOf(el).dataset.state = 'running';
    try {
      const scenarios = view.scenarios.map((s) => scaled(s, seed, load));
      const reports = await session.run(scenarios, (p) => {
        bar.value = (p.run + p.arrived / Math.max(1, p.total)) / p.runs;
        status.textContent = t.progress(p.run, p.runs, p.arrived, p.total);
      });
      const m = await measured;
      const sameWorkload = seed === (o.seed ?? 1) && load === 1;
      const cards = scenarioCards(view.variants, reports, sameWorkload ? m.byVariant : {});
      grid.replaceChildren();
      for (const c of cards) renderCard(grid, c, t, lang, m);
      status.textContent = reports.some((r) => r.partial) || reports.length < view.variants.length ? t.partial : t.finished(reports.length);
      emit(el, 'completed', { name: o.name, partial: reports.some((r) => r.partial), variants: reports.length });
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      error.textContent = t.failed(msg);
      error.hidden = false;
      failed = true;
      emit(el, 'error', { message: msg });
    } finally {
      running = false;
      runBtn.disabled = false;
      stopBtn.hidden = true;
      bar.hidden = true;
      hostOf(el).dataset.state = failed ? 'error' : 'ready';
    }
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const s = Number(seedIn.value.trim());
    const l = Number(loadIn.value.trim());
    const bad: string[] = [];
    if (!(Number.isInteger(s) && s >= 0 && s <= 0xffff_ffff) || seedIn.value.trim() === '') bad.push(t.seedBad);
    if (!(Number.isFinite(l) && l >= 0.1 && l <= 4) || loadIn.value.trim() === '') bad.push(t.loadBad);
    seedIn.setAttribute('aria-invalid', String(bad.includes(t.seedBad)));
    loadIn.setAttribute('aria-invalid', String(bad.includes(t.loadBad)));
    if (bad.length) {
      error.textContent = bad.join(' ');
      error.hidden = false;
      return;
    }
    seed = s;
    load = l;
    void run();
  });
  stopBtn.addEventListener('click', () => session.stop());

  try {
    const all = await session.curated();
    view = all.find((c) => c.name === o.name);
    if (!view) throw new Error(t.unknown(o.name, all.map((c) => c.name).join(', ')));
  } catch (err) {
    error.textContent = err instanceof Error ? err.message : String(err);
    error.hidden = false;
    form.hidden = true;
    hostOf(el).dataset.state = 'error';
    return () => {
      session.dispose();
      root.remove();
    };
  }
  note.textContent = t.assumptions(view.scenarios[0]!.kernel);
  hostOf(el).dataset.state = 'ready';
  void run();
  return () => {
    session.dispose();
    root.remove();
  };
}

function readScenario(el: HTMLElement): ScenarioOptions {
  const num = (name: string): number | undefined => {
    const v = el.getAttribute(name);
    return v === null || v.trim() === '' ? undefined : Number(v);
  };
  return { name: el.getAttribute('name') ?? '', seed: num('seed'), load: num('load') };
}

/** Registers `<reuseport-scenario>` once. */
export function defineScenarioElement(): void {
  defineIsland('reuseport-scenario', islandElement(mountScenario, readScenario, ['name', 'seed', 'load']));
}
