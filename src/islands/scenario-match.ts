/**
 * "Which scenario looks like mine?": `<reuseport-scenario-match>`. The user
 * gives per-worker counts (and optionally the median and p99 latency); every
 * curated variant is simulated in a Web Worker (progress, Stop), and the
 * model's matcher ranks them by how close their picture is. The five closest
 * are listed with a link to their page and the figures compared.
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

async function mountMatch(el: HTMLElement): Promise<() => void> {
  const lang = pageLang(el);
  const t = scenarioText(lang);
  const m = t.match;
  const root = el.appendChild(h('div', 'rl-sc rl-scm'));
  const session = new SimSession();
  const form = root.appendChild(h('form', 'rl-scm-form'));
  form.noValidate = true;
  const uid = Math.random().toString(36).slice(2, 8);
  const countsWrap = form.appendChild(h('div', 'rl-sc-field rl-scm-counts'));
  countsWrap.append(h('label', '', m.counts, { for: `rl-scm-c-${uid}` }));
  const counts = countsWrap.appendChild(
    h('textarea', '', '', { id: `rl-scm-c-${uid}`, rows: '2', 'aria-describedby': `rl-scm-ch-${uid}`, spellcheck: 'false' }),
  );
  counts.value = '349 17 4 0 0 0 0 0';
  countsWrap.append(h('span', 'rl-hint', m.countsHint, { id: `rl-scm-ch-${uid}` }));
  const lat = (label: string, key: string) => {
    const wrap = form.appendChild(h('div', 'rl-sc-field'));
    wrap.append(h('label', '', label, { for: `rl-scm-${key}-${uid}` }));
    return wrap.appendChild(h('input', '', '', { id: `rl-scm-${key}-${uid}`, inputmode: 'decimal', size: '8', 'aria-describedby': `rl-scm-lh-${uid}` }));
  };
  const p50 = lat(m.p50, 'p50');
  const p99 = lat(m.p99, 'p99');
  form.append(h('span', 'rl-hint rl-scm-lathint', m.latencyHint, { id: `rl-scm-lh-${uid}` }));
  const find = form.appendChild(h('button', 'rl-primary', m.find, { type: 'submit' }));
  const stop = form.appendChild(h('button', '', t.stop, { type: 'button' }));
  stop.hidden = true;
  const { status, bar, error } = runStatus(root);
  const out = root.appendChild(h('div', 'rl-scm-out'));
  let running = false;

  function show(a: MatchAnswer): void {
    out.replaceChildren();
    out.append(h('h3', 'rl-scm-head', m.results));
    const top = a.ranked.slice(0, SHOWN);
    const ol = out.appendChild(h('ol', 'rl-scm-list'));
    for (const r of top) {
      const li = ol.appendChild(h('li'));
      const title = t.scenarioTitle[r.name] ?? r.name;
      const variant = variantTitle(r.variant, t);
      const link = li.appendChild(h('a', '', title, { href: siteUrl(`scenarios/${r.name}/`, true, el) }));
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

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (running) return;
    const r = readObserved(counts.value, p50.value, p99.value, m);
    for (const [k, input] of [
      ['counts', counts],
      ['p50', p50],
      ['p99', p99],
    ] as const)
      input.setAttribute('aria-invalid', String('error' in r && r.field === k));
    if ('error' in r) {
      error.textContent = r.error;
      error.hidden = false;
      return;
    }
    error.hidden = true;
    running = true;
    find.disabled = true;
    stop.hidden = false;
    bar.hidden = false;
    hostOf(el).dataset.state = 'running';
    emit(el, 'started', { workers: r.observed.counts.length });
    session
      .match(r.observed, (p) => {
        bar.value = (p.run + p.arrived / Math.max(1, p.total)) / p.runs;
        status.textContent = m.progress(p.run + 1, p.runs);
      })
      .then((a) => {
        show(a);
        status.textContent = a.partial ? m.partial : '';
        const best = a.ranked[0];
        emit(el, 'completed', { partial: a.partial, best: best ? { name: best.name, variant: best.variant.id } : null });
      })
      .catch((err: unknown) => {
        const msg = err instanceof Error ? err.message : String(err);
        error.textContent = t.failed(msg);
        error.hidden = false;
        emit(el, 'error', { message: msg });
        hostOf(el).dataset.state = 'error';
      })
      .finally(() => {
        running = false;
        find.disabled = false;
        stop.hidden = true;
        bar.hidden = true;
        if (hostOf(el).dataset.state === 'running') hostOf(el).dataset.state = 'ready';
      });
  });
  stop.addEventListener('click', () => session.stop());
  hostOf(el).dataset.state = 'ready';
  return () => {
    session.dispose();
    root.remove();
  };
}

/** Registers `<reuseport-scenario-match>` once. */
export function defineScenarioMatchElement(): void {
  defineIsland(
    'reuseport-scenario-match',
    islandElement(mountMatch, () => ({})),
  );
}
