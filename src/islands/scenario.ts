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
 * The cards are drawn by src/render/scenario-card.ts; this file keeps the
 * form, the session and the state.
 *
 * States (`data-state` on the element): `loading` (the curated list is on its
 * way), `ready` (the form takes a run; the last run's cards are shown),
 * `running` (the variants are simulated: progress and Stop), `error` (the
 * scenario is unknown, or the last run failed), `disposed`.
 *
 * Events: `reuseport:started` `{name, seed, load}`, `reuseport:completed`
 * `{name, partial, variants}`, `reuseport:error` `{message}`.
 */
import { SimSession, type CuratedView, type Scenario, type SimReport } from '../model/sim';
import { renderScenarioCard, type CardMeasured } from '../render/scenario-card';
import { type Agreement, saturatedRuns } from '../scene/scenario-verdict';
import { scenarioCards } from '../scene/scenario-view';
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

/** A recording of this machine: measured reports by variant id, beside what the cards show of it. */
interface Measured extends CardMeasured {
  byVariant: Record<string, SimReport>;
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

/** Where the widget is (see the module documentation). */
export type ScenarioState = 'loading' | 'ready' | 'running' | 'error' | 'disposed';

/** One scenario on a page; made by {@link ScenarioWidget.mount}, removed by {@link ScenarioWidget.dispose}. */
export class ScenarioWidget {
  readonly #el: HTMLElement;
  readonly #name: string;
  /** The seed the page gave: the recording is compared only under it, at load 1. */
  readonly #givenSeed: number;
  readonly #lang: string;
  readonly #t: ScenarioText;
  readonly #session = new SimSession();
  readonly #ac = new AbortController();
  readonly #measured: Promise<Measured>;

  readonly #root: HTMLElement;
  readonly #form: HTMLFormElement;
  readonly #seedIn: HTMLInputElement;
  readonly #loadIn: HTMLInputElement;
  readonly #runBtn: HTMLButtonElement;
  readonly #stopBtn: HTMLButtonElement;
  readonly #status: HTMLParagraphElement;
  readonly #bar: HTMLProgressElement;
  readonly #error: HTMLParagraphElement;
  readonly #note: HTMLParagraphElement;
  readonly #grid: HTMLElement;

  #state: ScenarioState = 'loading';
  #seed: number;
  #load: number;
  #view: CuratedView | undefined;

  /** Shows the widget under `el`, finds the scenario and runs it once. */
  static async mount(el: HTMLElement, o: ScenarioOptions): Promise<ScenarioWidget> {
    const w = new ScenarioWidget(el, o);
    await w.#start();
    return w;
  }

  private constructor(el: HTMLElement, o: ScenarioOptions) {
    this.#el = el;
    this.#name = o.name;
    this.#givenSeed = o.seed ?? 1;
    this.#seed = this.#givenSeed;
    this.#load = o.load ?? 1;
    this.#lang = pageLang(el);
    this.#t = scenarioText(this.#lang);
    const t = this.#t;
    const on = { signal: this.#ac.signal };
    this.#root = el.appendChild(h('div', 'rl-sc'));
    this.#form = this.#root.appendChild(h('form', 'rl-sc-controls'));
    this.#form.noValidate = true;
    this.#seedIn = this.#field(t.seed, String(this.#seed));
    this.#loadIn = this.#field(t.load, String(this.#load), t.loadHint);
    this.#runBtn = this.#form.appendChild(h('button', 'rl-primary', t.run, { type: 'submit' }));
    this.#stopBtn = this.#form.appendChild(h('button', '', t.stop, { type: 'button' }));
    this.#stopBtn.hidden = true;
    ({ status: this.#status, bar: this.#bar, error: this.#error } = runStatus(this.#root));
    this.#note = this.#root.appendChild(h('p', 'rl-hint rl-sc-note'));
    this.#grid = this.#root.appendChild(h('div', 'rl-sc-grid'));
    provideSettings(el, () => ({ name: this.#name, seed: String(this.#seed), load: String(this.#load) }));
    this.#form.addEventListener('submit', (e) => this.#submit(e), on);
    this.#stopBtn.addEventListener('click', () => this.#session.stop(), on);
    this.#measured = measuredOf(this.#name, el);
    this.#setState('loading');
  }

  /** The state the widget is in. */
  get state(): ScenarioState {
    return this.#state;
  }

  #setState(s: ScenarioState): void {
    this.#state = s;
    hostOf(this.#el).dataset.state = s;
  }

  /** A labelled number field of the form. */
  #field(label: string, value: string, hint?: string): HTMLInputElement {
    const id = `rl-sc-${Math.random().toString(36).slice(2, 8)}`;
    const wrap = this.#form.appendChild(h('div', 'rl-sc-field'));
    wrap.append(h('label', '', label, { for: id }));
    const input = wrap.appendChild(h('input', '', '', { id, inputmode: 'decimal', value, size: '8' }));
    if (hint) {
      input.setAttribute('aria-describedby', `${id}-hint`);
      wrap.append(h('span', 'rl-hint', hint, { id: `${id}-hint` }));
    }
    return input;
  }

  /** Finds the scenario among the curated ones; runs it, or says it is unknown. */
  async #start(): Promise<void> {
    const t = this.#t;
    try {
      const all = await this.#session.curated();
      this.#view = all.find((c) => c.name === this.#name);
      if (!this.#view) throw new Error(t.unknown(this.#name, all.map((c) => c.name).join(', ')));
    } catch (err) {
      this.#error.textContent = err instanceof Error ? err.message : String(err);
      this.#error.hidden = false;
      this.#form.hidden = true;
      this.#setState('error');
      return;
    }
    this.#note.textContent = t.assumptions(this.#view.scenarios[0]!.kernel);
    this.#setState('ready');
    void this.run();
  }

  /** Checks the seed and the load; runs with them, or says which is wrong. */
  #submit(e: Event): void {
    e.preventDefault();
    const t = this.#t;
    const seedIn = this.#seedIn;
    const loadIn = this.#loadIn;
    const s = Number(seedIn.value.trim());
    const l = Number(loadIn.value.trim());
    const bad: string[] = [];
    if (!(Number.isInteger(s) && s >= 0 && s <= 0xffff_ffff) || seedIn.value.trim() === '') bad.push(t.seedBad);
    if (!(Number.isFinite(l) && l >= 0.1 && l <= 4) || loadIn.value.trim() === '') bad.push(t.loadBad);
    seedIn.setAttribute('aria-invalid', String(bad.includes(t.seedBad)));
    loadIn.setAttribute('aria-invalid', String(bad.includes(t.loadBad)));
    if (bad.length) {
      this.#error.textContent = bad.join(' ');
      this.#error.hidden = false;
      return;
    }
    this.#seed = s;
    this.#load = l;
    void this.run();
  }

  /** Simulates every variant with the current seed and load, and draws a card for each. */
  async run(): Promise<void> {
    const view = this.#view;
    if (!view || this.#state === 'running' || this.#state === 'disposed') return;
    const t = this.#t;
    const { name } = this;
    const seed = this.#seed;
    const load = this.#load;
    let failed = false;
    this.#runBtn.disabled = true;
    this.#stopBtn.hidden = false;
    this.#bar.hidden = false;
    this.#error.hidden = true;
    emit(this.#el, 'started', { name, seed, load });
    this.#setState('running');
    try {
      const scenarios = view.scenarios.map((s) => scaled(s, seed, load));
      const reports = await this.#session.run(scenarios, (p) => {
        this.#bar.value = (p.run + p.arrived / Math.max(1, p.total)) / p.runs;
        this.#status.textContent = t.progress(p.run, p.runs, p.arrived, p.total);
      });
      const m = await this.#measured;
      const sameWorkload = seed === this.#givenSeed && load === 1;
      const cards = scenarioCards(view.variants, reports, sameWorkload ? m.byVariant : {});
      this.#grid.replaceChildren();
      const lang = this.#lang;
      for (const c of cards)
        renderScenarioCard(this.#grid, c, { title: variantTitle(c.variant, t), text: t, lang, figure: (v, key) => formatFigure(v, key, lang) }, m);
      const partial = reports.some((r) => r.partial);
      this.#status.textContent = partial || reports.length < view.variants.length ? t.partial : t.finished(reports.length);
      emit(this.#el, 'completed', { name, partial, variants: reports.length });
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      this.#error.textContent = t.failed(msg);
      this.#error.hidden = false;
      failed = true;
      emit(this.#el, 'error', { message: msg });
    } finally {
      this.#runBtn.disabled = false;
      this.#stopBtn.hidden = true;
      this.#bar.hidden = true;
      if (!this.#ac.signal.aborted) this.#setState(failed ? 'error' : 'ready');
    }
  }

  /** The scenario's name. */
  get name(): string {
    return this.#name;
  }

  dispose(): void {
    this.#ac.abort();
    this.#session.dispose();
    this.#setState('disposed');
    this.#root.remove();
  }
}

async function mountScenario(el: HTMLElement, o: ScenarioOptions): Promise<() => void> {
  const w = await ScenarioWidget.mount(el, o);
  return () => w.dispose();
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
