/**
 * "Which scenario looks like mine?": `<reuseport-scenario-match>`. The user
 * gives per-worker counts (and optionally the median and p99 latency); every
 * curated variant is simulated in a Web Worker (progress, Stop), and the
 * model's matcher ranks them by how close their picture is. The five closest
 * are listed with a link to their page and the figures compared.
 *
 * States (`data-state` on the element): `ready` (the form takes counts; the
 * last ranking, if any, is shown), `running` (every variant is simulated:
 * progress and Stop), `error` (the simulation failed: the alert says why),
 * `disposed`.
 *
 * Events: `reuseport:started` `{workers}`, `reuseport:completed`
 * `{partial, best: {name, variant}}`, `reuseport:error` `{message}`.
 */
import { SimSession, type MatchAnswer, type Observed, type Shape } from '../model/sim';
import { tableElement } from '../render/table';
import { defineIsland, emit, hostOf, islandElement } from './element';
import { scenarioText, variantTitle, type ScenarioText } from './scenario-text';
import { h, runStatus } from './dom';
import { pageLang, siteUrl } from './site';

/** Counts longer than this (characters) are refused before parsing. */
const MAX_TEXT = 64 * 1024;
const SHOWN = 5;

/** The counts and latencies typed, or the first thing wrong with them (in the page's words). */
export function readObserved(
  counts: string,
  p50: string,
  p99: string,
  t: ScenarioText['match'],
): { observed: Observed } | { error: string; field: 'counts' | 'p50' | 'p99' } {
  const words = counts
    .slice(0, MAX_TEXT + 1)
    .split(/[\s,;]+/)
    .filter(Boolean);
  if (counts.length > MAX_TEXT || words.length < 2 || words.length > 4096)
    return { error: t.countsCount(counts.length > MAX_TEXT ? 4097 : words.length), field: 'counts' };
  const nums: number[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const n = /^\d{1,13}$/.test(w) ? Number(w) : Number.NaN;
    if (!(Number.isSafeInteger(n) && n <= 1e12)) return { error: t.countsBad(i + 1, w.length > 20 ? `${w.slice(0, 20)}…` : w), field: 'counts' };
    nums.push(n);
  }
  const ms = (v: string, field: 'p50' | 'p99', label: string): number | undefined | { error: string; field: 'p50' | 'p99' } => {
    if (v.trim() === '') return undefined;
    const x = Number(v.trim());
    return Number.isFinite(x) && x > 0 && x < 1e9 ? x : { error: t.latencyBad(label), field };
  };
  const a = ms(p50, 'p50', t.p50);
  if (typeof a === 'object') return a;
  const b = ms(p99, 'p99', t.p99);
  if (typeof b === 'object') return b;
  return { observed: { counts: nums, ...(a !== undefined ? { p50Ms: a } : {}), ...(b !== undefined ? { p99Ms: b } : {}) } };
}

/** Where the form is (see the module documentation). */
export type MatchState = 'ready' | 'running' | 'error' | 'disposed';

/** The "which scenario looks like mine?" form on a page; removed by {@link ScenarioMatch.dispose}. */
export class ScenarioMatch {
  readonly #el: HTMLElement;
  readonly #lang: string;
  readonly #t: ScenarioText;
  readonly #session = new SimSession();
  readonly #ac = new AbortController();
  readonly #root: HTMLElement;
  readonly #counts: HTMLTextAreaElement;
  readonly #p50: HTMLInputElement;
  readonly #p99: HTMLInputElement;
  readonly #find: HTMLButtonElement;
  readonly #stop: HTMLButtonElement;
  readonly #status: HTMLParagraphElement;
  readonly #bar: HTMLProgressElement;
  readonly #error: HTMLParagraphElement;
  readonly #out: HTMLElement;
  #state: MatchState = 'ready';

  constructor(el: HTMLElement) {
    this.#el = el;
    this.#lang = pageLang(el);
    const t = scenarioText(this.#lang);
    this.#t = t;
    const m = t.match;
    this.#root = el.appendChild(h('div', 'rl-sc rl-scm'));
    const form = this.#root.appendChild(h('form', 'rl-scm-form'));
    form.noValidate = true;
    const uid = Math.random().toString(36).slice(2, 8);
    const countsWrap = form.appendChild(h('div', 'rl-sc-field rl-scm-counts'));
    countsWrap.append(h('label', '', m.counts, { for: `rl-scm-c-${uid}` }));
    this.#counts = countsWrap.appendChild(
      h('textarea', '', '', { id: `rl-scm-c-${uid}`, rows: '2', 'aria-describedby': `rl-scm-ch-${uid}`, spellcheck: 'false' }),
    );
    this.#counts.value = '349 17 4 0 0 0 0 0';
    countsWrap.append(h('span', 'rl-hint', m.countsHint, { id: `rl-scm-ch-${uid}` }));
    const lat = (label: string, key: string) => {
      const wrap = form.appendChild(h('div', 'rl-sc-field'));
      wrap.append(h('label', '', label, { for: `rl-scm-${key}-${uid}` }));
      return wrap.appendChild(h('input', '', '', { id: `rl-scm-${key}-${uid}`, inputmode: 'decimal', size: '8', 'aria-describedby': `rl-scm-lh-${uid}` }));
    };
    this.#p50 = lat(m.p50, 'p50');
    this.#p99 = lat(m.p99, 'p99');
    form.append(h('span', 'rl-hint rl-scm-lathint', m.latencyHint, { id: `rl-scm-lh-${uid}` }));
    this.#find = form.appendChild(h('button', 'rl-primary', m.find, { type: 'submit' }));
    this.#stop = form.appendChild(h('button', '', t.stop, { type: 'button' }));
    this.#stop.hidden = true;
    ({ status: this.#status, bar: this.#bar, error: this.#error } = runStatus(this.#root));
    this.#out = this.#root.appendChild(h('div', 'rl-scm-out'));
    const on = { signal: this.#ac.signal };
    form.addEventListener(
      'submit',
      (e) => {
        e.preventDefault();
        void this.match();
      },
      on,
    );
    this.#stop.addEventListener('click', () => this.#session.stop(), on);
    this.#setState('ready');
  }

  /** The state the form is in. */
  get state(): MatchState {
    return this.#state;
  }

  #setState(s: MatchState): void {
    if (this.#state === 'disposed') return;
    this.#state = s;
    hostOf(this.#el).dataset.state = s;
  }

  /** Reads the counts and latencies, simulates every curated variant and ranks them; a bad field is named. */
  async match(): Promise<void> {
    if (this.#state === 'running' || this.#state === 'disposed') return;
    const t = this.#t;
    const m = t.match;
    const r = readObserved(this.#counts.value, this.#p50.value, this.#p99.value, m);
    for (const [k, input] of [
      ['counts', this.#counts],
      ['p50', this.#p50],
      ['p99', this.#p99],
    ] as const)
      input.setAttribute('aria-invalid', String('error' in r && r.field === k));
    if ('error' in r) {
      this.#error.textContent = r.error;
      this.#error.hidden = false;
      return;
    }
    this.#error.hidden = true;
    this.#find.disabled = true;
    this.#stop.hidden = false;
    this.#bar.hidden = false;
    this.#setState('running');
    emit(this.#el, 'started', { workers: r.observed.counts.length });
    let failed = false;
    try {
      const a = await this.#session.match(r.observed, (p) => {
        this.#bar.value = (p.run + p.arrived / Math.max(1, p.total)) / p.runs;
        this.#status.textContent = m.progress(p.run + 1, p.runs);
      });
      this.#show(a);
      this.#status.textContent = a.partial ? m.partial : '';
      const best = a.ranked[0];
      emit(this.#el, 'completed', { partial: a.partial, best: best ? { name: best.name, variant: best.variant.id } : null });
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      this.#error.textContent = t.failed(msg);
      this.#error.hidden = false;
      emit(this.#el, 'error', { message: msg });
      this.#setState('error');
      failed = true;
    } finally {
      this.#find.disabled = false;
      this.#stop.hidden = true;
      this.#bar.hidden = true;
      if (!failed) this.#setState('ready');
    }
  }

  /** The closest runs, linked to their pages, and their figures beside the observation's in one table. */
  #show(a: MatchAnswer): void {
    const t = this.#t;
    const m = t.match;
    const lang = this.#lang;
    const out = this.#out;
    out.replaceChildren();
    out.append(h('h3', 'rl-scm-head', m.results));
    const top = a.ranked.slice(0, SHOWN);
    const ol = out.appendChild(h('ol', 'rl-scm-list'));
    for (const r of top) {
      const li = ol.appendChild(h('li'));
      const title = t.scenarioTitle[r.name] ?? r.name;
      const variant = variantTitle(r.variant, t);
      const link = li.appendChild(h('a', '', title, { href: siteUrl(`scenarios/${r.name}/`, true, this.#el) }));
      link.setAttribute('aria-label', m.open(title));
      li.append(document.createTextNode(` — ${variant}`));
    }
    // One table for all: the observation's figures, then each ranked run's, numbered as the list.
    const f = (v: number) => v.toLocaleString(lang, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    const row = (label: string, sh: Shape, d: string) => [label, f(sh.concentration), f(sh.emptyShare), f(sh.evenness), d];
    out.append(
      tableElement({
        caption: m.shapeCaption,
        captionClass: 'rl-hint',
        className: 'rl-sc-figures rl-scm-shape',
        head: m.shapeHead,
        rowHeads: true,
        rows: [row(m.yours, a.observed, ''), ...top.map((r, i) => row(String(i + 1), r.shape, f(r.distance)))],
      }),
    );
  }

  dispose(): void {
    this.#ac.abort();
    this.#session.dispose();
    this.#setState('disposed');
    this.#root.remove();
  }
}

async function mountMatch(el: HTMLElement): Promise<() => void> {
  const w = new ScenarioMatch(el);
  return () => w.dispose();
}

/** Registers `<reuseport-scenario-match>` once. */
export function defineScenarioMatchElement(): void {
  defineIsland(
    'reuseport-scenario-match',
    islandElement(mountMatch, () => ({})),
  );
}
