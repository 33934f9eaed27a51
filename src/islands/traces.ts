/**
 * The trace viewer `<reuseport-traces>` (choose a curated trace or open your
 * own; recorded choices beside the model's, agreement, per-listener counts,
 * the layout, "explain" on any row) and the compact card
 * `<reuseport-trace src="tcp-v4-specific-8.json">` for chapters.
 *
 * The model predicts and explains (src/model/trace.ts); the charts, facts,
 * rows and the benchmark view are drawn by src/render/trace-view.ts. This
 * file keeps the choice, the page of rows and the runs.
 *
 * States (`data-state` on either element): `loading` (a trace is fetched,
 * read or predicted), `ready` (it is shown, or a prediction was cancelled),
 * `error` (it could not be fetched, read or predicted: the errors say why),
 * `disposed`.
 */
import { select, type Selection } from 'd3';
import { Group, loadModel } from '../model/index';
import { MAX_TRACE_BYTES, checkTrace, explainEvent, predictTrace, traceGroup, type Trace } from '../model/trace';
import { TRAIN_EVENTS, rows, summarize } from '../scene/trace-view';
import { explainView } from '../scene/explain-view';
import { SHOWN_COMMAND, cutText } from '../scene/cut';
import { renderExplain } from '../render/explain-card';
import { renderTextTable } from '../render/table';
import { chartWidth, renderBars, renderBench, renderCountsTable, renderFacts, renderRows, type BenchFile, type TraceFact } from '../render/trace-view';
import { hex32, parseHex32 } from '../hex';
import { defineIsland, hostOf, islandElement } from './element';
import { pageLang, siteUrl } from './site';
import { traceText, type TraceText } from './trace-text';
import type { Lang } from '../model/messages';

/** One entry of public/traces/manifest.json. */
interface ManifestEntry {
  file: string;
  kind: string;
  shows: string;
  key?: string;
  keyFrom?: string;
}

const PAGE = 50;

type WorkerAnswer = { trace?: Trace; errors?: string[]; notJson?: string };
type WorkerMessage = { head?: Trace; events?: Trace['events']; done?: true; errors?: string[]; notJson?: string };

/**
 * Parses and checks a dropped file in a worker (a large file would freeze the
 * page here); the trace arrives in slices, each quick to receive.
 */
function readInWorker(f: File): Promise<WorkerAnswer> {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL('../model/trace-worker.ts', import.meta.url), { type: 'module' });
    let trace: Trace | undefined;
    w.onmessage = (e: MessageEvent<WorkerMessage>) => {
      const m = e.data;
      if (m.head) trace = m.head;
      else if (m.events && trace) for (const ev of m.events) trace.events.push(ev);
      else {
        w.terminate();
        resolve(m.done ? { trace } : { errors: m.errors, notJson: m.notJson });
      }
    };
    w.onerror = (e) => {
      w.terminate();
      reject(new Error(e.message));
    };
    w.postMessage(f);
  });
}

/** Where the site's traces are: `<base>traces/`. */
const tracesUrl = (): string => siteUrl('traces/');

/** The trace viewer page of the site in the page's language. */
const viewerUrl = (file: string): string => siteUrl(`traces/?trace=${encodeURIComponent(file)}`, true);

let manifest: Promise<ManifestEntry[]> | undefined;
function loadManifest(): Promise<ManifestEntry[]> {
  manifest ??= fetch(`${tracesUrl()}manifest.json`).then(async (r) => {
    if (!r.ok) throw new Error(`${r.status} ${r.statusText}`);
    return ((await r.json()) as { traces: ManifestEntry[] }).traces;
  });
  return manifest;
}

async function fetchTrace(file: string, t: TraceText): Promise<Trace> {
  const url = `${tracesUrl()}${file}`;
  const r = await fetch(url);
  if (!r.ok) throw new Error(t.fetchFailed(url, `${r.status} ${r.statusText}`));
  const checked = checkTrace(await r.json());
  if (checked.errors) throw new Error(`${t.invalid(file)} ${checked.errors.join('; ')}`);
  return checked.trace;
}

/** Where a trace widget is (see the module documentation). */
export type TraceState = 'loading' | 'ready' | 'error' | 'disposed';

type Sel<E extends Element> = Selection<E, unknown, null, undefined>;

/** What the viewer shows: the trace, the model's prediction once made, and the key it was made under. */
interface Shown {
  trace: Trace;
  pred?: Int32Array;
  key?: number;
  keyFrom?: string;
  name: string;
}

/** The full viewer on a page; made by {@link TraceViewer.mount}, removed by {@link TraceViewer.dispose}. */
export class TraceViewer {
  static #uid = 0;

  readonly #el: HTMLElement;
  readonly #lang: Lang;
  readonly #t: TraceText;
  readonly #id: string;
  readonly #ac = new AbortController();

  readonly #root: Sel<HTMLDivElement>;
  readonly #sel: Sel<HTMLSelectElement>;
  readonly #status: Sel<HTMLParagraphElement>;
  readonly #replayLine: Sel<HTMLParagraphElement>;
  readonly #progress: Sel<HTMLDivElement>;
  readonly #bar: Sel<HTMLProgressElement>;
  readonly #errors: Sel<HTMLDivElement>;
  readonly #body: Sel<HTMLDivElement>;

  #state: TraceState = 'loading';
  /** The curated traces and benchmarks of the manifest. */
  #traces: ManifestEntry[] = [];
  #abort: AbortController | undefined;
  #current: Shown | undefined;
  /** The first row of the page of rows shown. */
  #from = 0;
  #onlyMiss = false;

  /** Loads the model and the manifest, shows the viewer under `el`, and opens the trace asked for (or the first). */
  static async mount(el: HTMLElement, options: { trace?: string } = {}): Promise<TraceViewer> {
    await loadModel();
    const w = new TraceViewer(el);
    await w.#start(options.trace);
    return w;
  }

  private constructor(el: HTMLElement) {
    this.#el = el;
    this.#lang = pageLang(el);
    this.#t = traceText(this.#lang);
    const t = this.#t;
    this.#id = `rl-traces-${++TraceViewer.#uid}`;
    const id = this.#id;
    const on = { signal: this.#ac.signal };
    this.#root = select(el).append('div').attr('class', 'rl-tv');
    const root = this.#root;
    const pick = root.append('div').attr('class', 'rl-tv-pick');
    pick.append('label').attr('for', `${id}-sel`).text(t.choose);
    this.#sel = pick.append('select').attr('id', `${id}-sel`);
    const fileWrap = pick.append('label').attr('class', 'rl-tv-file');
    fileWrap.append('span').text(`${t.orDrop}: `);
    const fileInput = fileWrap.append('input').attr('type', 'file').attr('accept', '.json,application/json').node()!;
    this.#status = root.append('p').attr('class', 'rl-tv-status').attr('role', 'status').attr('aria-live', 'polite');
    // "Your server, replayed": the visualizer replays a trace of the site by name; a file of one's own is picked there.
    this.#replayLine = root.append('p').attr('class', 'rl-tv-replay').property('hidden', true);
    // Idle, the progress row is invisible but keeps its height: shown and hidden around each prediction,
    // it moved the whole report down and up (a layout shift).
    this.#progress = root.append('div').attr('class', 'rl-tv-progress rl-tv-idle');
    this.#bar = this.#progress.append('progress').attr('max', 1).attr('value', 0);
    const cancelBtn = this.#progress.append('button').attr('type', 'button').text(t.cancel).node()!;
    this.#errors = root.append('div').attr('class', 'rl-errors').attr('role', 'alert');
    this.#body = root.append('div').attr('class', 'rl-tv-body');
    this.#setState('loading');

    cancelBtn.addEventListener('click', () => this.#abort?.abort(), on);
    this.#sel.node()!.addEventListener('change', () => void this.openCurated(String(this.#sel.property('value'))), on);
    fileInput.addEventListener(
      'change',
      () => {
        const f = fileInput.files?.[0];
        if (f) void this.openFile(f);
      },
      on,
    );
    el.addEventListener(
      'dragover',
      (e) => {
        e.preventDefault();
        el.classList.add('rl-tv-dragging');
      },
      on,
    );
    el.addEventListener('dragleave', () => el.classList.remove('rl-tv-dragging'), on);
    el.addEventListener(
      'drop',
      (e) => {
        e.preventDefault();
        el.classList.remove('rl-tv-dragging');
        const f = e.dataTransfer?.files[0];
        if (f) void this.openFile(f);
      },
      on,
    );
  }

  /** The state the viewer is in. */
  get state(): TraceState {
    return this.#state;
  }

  #setState(s: TraceState): void {
    if (this.#state === 'disposed') return;
    this.#state = s;
    hostOf(this.#el).dataset.state = s;
  }

  /** Fills the choice from the manifest and opens `trace`, the page's `?trace=`, or the first. */
  async #start(trace: string | undefined): Promise<void> {
    const entries = await loadManifest().catch(() => [] as ManifestEntry[]);
    this.#traces = entries.filter((e) => e.kind === 'trace' || e.kind === 'bench');
    this.#sel
      .selectAll('option')
      .data(this.#traces)
      .join('option')
      .attr('value', (e) => e.file)
      .text((e) => `${e.file}: ${this.#t.shows(e)}`);
    const wanted = trace ?? new URLSearchParams(location.search).get('trace') ?? this.#traces[0]?.file;
    if (!wanted) {
      // Nothing to open (an empty manifest): the viewer waits for a file, in a state an embedder can wait for.
      this.#setState('ready');
      return;
    }
    this.#sel.property('value', wanted);
    // Mounted once the first trace is shown: the "Embed this" panel, added under the widget when it has mounted,
    // then comes below the report instead of being pushed down the screen by it (a layout shift).
    await this.openCurated(wanted);
  }

  /** The link to the visualizer's replay of `file`, or (null) what to do with a file of one's own. */
  #showReplay(file: string | null): void {
    const t = this.#t;
    this.#replayLine.property('hidden', false).selectAll('*').remove();
    if (file === null) this.#replayLine.text(t.replayFile);
    else
      this.#replayLine
        .text('')
        .append('a')
        .attr('href', siteUrl(`dispatch/?replay=${encodeURIComponent(file)}`, true))
        .text(t.replay);
  }

  /** The recording's facts: kernel, group, how it chose, when and how it was recorded, the key. */
  #facts(cur: Shown): TraceFact[] {
    const t = this.#t;
    const tr = cur.trace;
    const facts: TraceFact[] = [
      { label: t.kernel, text: t.kernelLine(tr.kernel.release, tr.kernel.profile) },
      { label: t.group, text: t.groupLine(tr.group) },
      { label: t.program, text: t.selection(tr.group) },
    ];
    if (tr.recorded) facts.push({ label: t.recorded, text: tr.recorded });
    if (tr.command) {
      // A command as long as the schema allows (64 Ki characters) is cut: the rest would be layout work for nothing.
      const { shown, left } = cutText(tr.command, SHOWN_COMMAND);
      facts.push({ label: t.command, command: shown, more: left ? t.cutMore(left) : null });
    }
    facts.push({ label: t.key, text: cur.key === undefined ? t.keyNone : t.keyFromManifest(hex32(cur.key), cur.keyFrom) });
    return facts;
  }

  /** Draws the shown trace: its facts, the agreement and spread, the key form, and a page of rows. */
  #draw(): void {
    const body = this.#body;
    const t = this.#t;
    const id = this.#id;
    body.html('');
    const current = this.#current;
    if (!current) return;
    const { trace: tr, pred } = current;
    const s = summarize(tr, pred);
    const meta = body.append('section').attr('class', 'rl-section').attr('aria-labelledby', `${id}-meta`);
    meta.append('h2').attr('id', `${id}-meta`).text(t.layout);
    renderFacts(meta.append('dl'), this.#facts(current));

    const fig = body.append('section').attr('class', 'rl-section');
    fig
      .append('p')
      .attr('class', 'rl-headline rl-tv-agree')
      .text(pred ? t.agreementAll(s.all, s.events) : '');
    if (pred && current.key !== undefined && !current.keyFrom) fig.append('p').attr('class', 'rl-tv-held').text(t.agreementHeld(s.heldOut, TRAIN_EVENTS));
    fig.append('p').text(t.spread(s));
    const chart = fig.append('div').attr('class', 'rl-tv-chart').node()!;
    renderBars(chart, s, t, chartWidth(chart));
    renderCountsTable(fig as never, s, t);

    const keyForm = fig.append('form').attr('class', 'rl-tv-keyform').attr('novalidate', '');
    keyForm.append('label').attr('for', `${id}-key`).text(t.keyLabel);
    const keyIn = keyForm
      .append('input')
      .attr('id', `${id}-key`)
      .attr('size', 12)
      .property('value', current.key === undefined ? '' : hex32(current.key));
    keyForm.append('button').attr('type', 'submit').text(t.apply);
    const keyErr = keyForm.append('span').attr('class', 'rl-hint').attr('role', 'alert');
    keyForm.on('submit', (ev: Event) => {
      ev.preventDefault();
      const k = parseHex32(String(keyIn.property('value')));
      if (k === undefined) {
        keyErr.text(t.keyBad);
        return;
      }
      const cur = this.#current;
      if (cur) void this.#predict(cur.trace, cur.name, k, k === cur.key ? cur.keyFrom : undefined);
    });

    const ev = body.append('section').attr('class', 'rl-section');
    ev.append('h2').text(t.events);
    const tools = ev.append('div').attr('class', 'rl-tv-tools');
    const onlyLabel = tools.append('label');
    onlyLabel
      .append('input')
      .attr('type', 'checkbox')
      .property('checked', this.#onlyMiss)
      .on('change', (e: Event) => {
        this.#onlyMiss = (e.currentTarget as HTMLInputElement).checked;
        this.#from = 0;
        this.#draw();
      });
    onlyLabel.append('span').text(` ${t.onlyMismatches}`);
    const from = this.#from;
    const page = rows(tr, pred, from, PAGE, this.#onlyMiss);
    const nav = tools.append('span').attr('class', 'rl-tv-pager');
    nav
      .append('button')
      .attr('type', 'button')
      .text(t.prev)
      .property('disabled', from === 0)
      .on('click', () => {
        this.#from = Math.max(0, from - PAGE);
        this.#draw();
      });
    nav
      .append('span')
      .attr('aria-live', 'polite')
      .text(` ${t.page(page.total ? from + 1 : 0, Math.min(page.total, from + PAGE), page.total)} `);
    nav
      .append('button')
      .attr('type', 'button')
      .text(t.next)
      .property('disabled', from + PAGE >= page.total)
      .on('click', () => {
        this.#from = from + PAGE;
        this.#draw();
      });
    const wrap = ev.append('div').attr('class', 'rl-tv-tablewrap').attr('tabindex', 0).attr('role', 'region').attr('aria-label', t.events);
    const table = renderTextTable(wrap, {
      className: 'rl-table rl-tv-table',
      head: [t.seq, t.tuple, t.cpu, t.kernelPick, t.modelPick, t.agrees, t.explain],
      rows: [],
    });
    const explainBox = ev.append('div').attr('class', 'rl-tv-explain').attr('tabindex', '-1');
    renderRows(table.select<HTMLTableSectionElement>('tbody'), page.rows, t, (i) => this.#explain(explainBox, tr, i));
  }

  /** The model's whole lookup for event `i` of `tr`, under the key shown, in `box`. */
  #explain(box: Sel<HTMLDivElement>, tr: Trace, i: number): void {
    const t = this.#t;
    const e = tr.events[i]!;
    const group = new Group(tr.kernel.release, traceGroup(tr, this.#current?.key ?? 0));
    try {
      const x = explainEvent(group, tr, i);
      box.html('');
      box.append('h3').text(`${t.explain}: #${e.seq ?? i}, ${t.kernelPick} ${e.listener}`);
      renderExplain(box.append('div').node()!, explainView(x, this.#lang), 4);
      box.node()!.focus();
    } catch (err) {
      box.text(err instanceof Error ? err.message : String(err));
    } finally {
      group.dispose();
    }
  }

  /** Shows `tr` at once and the model's prediction under `key` when it is made (cancelled by a newer one). */
  async #predict(tr: Trace, name: string, key: number | undefined, keyFrom?: string): Promise<void> {
    const t = this.#t;
    this.#abort?.abort();
    const ctl = new AbortController();
    this.#abort = ctl;
    this.#current = { trace: tr, key, keyFrom, name };
    this.#from = 0;
    this.#draw();
    this.#progress.classed('rl-tv-idle', false);
    try {
      const pred = await predictTrace(tr, {
        key,
        signal: ctl.signal,
        onProgress: (d, n) => {
          this.#bar.attr('value', d / n);
          this.#status.text(t.predicting(d, n));
        },
      });
      if (ctl.signal.aborted || this.#current?.trace !== tr) return;
      this.#current = { trace: tr, key, keyFrom, name, pred };
      this.#status.text(name);
      this.#setState('ready');
      this.#draw();
    } catch (err) {
      const cancelled = err instanceof DOMException && err.name === 'AbortError';
      if (cancelled) this.#status.text(t.cancelled);
      else this.#errors.text(err instanceof Error ? err.message : String(err));
      // A run another one replaced leaves the state to that one; otherwise the state ends here, never at 'loading'.
      if (this.#abort === ctl) this.#setState(cancelled ? 'ready' : 'error');
    } finally {
      if (this.#abort === ctl) this.#progress.classed('rl-tv-idle', true);
    }
  }

  /** Opens a trace or benchmark of the site by its file name. */
  async openCurated(file: string): Promise<void> {
    const t = this.#t;
    this.#errors.text('');
    this.#setState('loading');
    this.#status.text(t.loading(file));
    const entry = this.#traces.find((e) => e.file === file);
    if (entry?.kind === 'bench') {
      this.#abort?.abort();
      this.#current = undefined;
      try {
        const r = await fetch(`${tracesUrl()}${file}`);
        if (!r.ok) throw new Error(t.fetchFailed(file, `${r.status} ${r.statusText}`));
        this.#body.html('');
        renderBench(this.#body, (await r.json()) as BenchFile, t);
        this.#status.text(file);
        this.#setState('ready');
      } catch (err) {
        this.#setState('error');
        this.#errors.text(err instanceof Error ? err.message : String(err));
      }
      return;
    }
    try {
      const tr = await fetchTrace(file, t);
      this.#showReplay(tr.group.bind.includes(':') ? null : file);
      await this.#predict(tr, file, entry?.key ? parseHex32(entry.key) : undefined, entry?.keyFrom);
    } catch (err) {
      this.#setState('error');
      this.#errors.text(err instanceof Error ? err.message : String(err));
    }
  }

  /** Opens a trace file of the reader's own, read and checked in a worker. */
  async openFile(f: File): Promise<void> {
    const t = this.#t;
    const errors = this.#errors;
    errors.text('');
    this.#setState('loading');
    // Every refusal ends in 'error', so an embedder waiting for a terminal state sees one.
    const refused = () => {
      this.#setState('error');
      this.#status.text('');
    };
    if (f.size > MAX_TRACE_BYTES) {
      errors.text(t.tooBig(f.size / 2 ** 20, MAX_TRACE_BYTES / 2 ** 20));
      return refused();
    }
    this.#status.text(t.loading(f.name));
    const checked = await readInWorker(f).catch((err: unknown) => ({ notJson: err instanceof Error ? err.message : String(err) }) as WorkerAnswer);
    if (checked.notJson !== undefined) {
      errors.text(t.notJson(f.name, checked.notJson));
      return refused();
    }
    if (checked.errors) {
      errors.html('');
      errors.append('p').text(t.invalid(f.name));
      errors
        .append('ul')
        .selectAll('li')
        .data(checked.errors)
        .join('li')
        .text((d) => d);
      return refused();
    }
    this.#showReplay(null);
    await this.#predict(checked.trace!, f.name, undefined);
  }

  dispose(): void {
    this.#abort?.abort();
    this.#ac.abort();
    this.#setState('disposed');
    this.#root.remove();
  }
}

/** The full viewer. */
export async function mountTraces(el: HTMLElement, options: { trace?: string } = {}): Promise<() => void> {
  const w = await TraceViewer.mount(el, options);
  return () => w.dispose();
}

/** The compact card on a page; made by {@link TraceCard.mount}, removed by {@link TraceCard.dispose}. */
export class TraceCard {
  readonly #el: HTMLElement;
  readonly #root: Sel<HTMLDivElement>;
  readonly #ac = new AbortController();
  #state: TraceState = 'loading';

  /** Loads the model and shows the card of `options.src` under `el`: counts, agreement, a link to the viewer. */
  static async mount(el: HTMLElement, options: { src: string }): Promise<TraceCard> {
    await loadModel();
    const w = new TraceCard(el);
    await w.#show(options.src);
    return w;
  }

  private constructor(el: HTMLElement) {
    this.#el = el;
    this.#root = select(el).append('div').attr('class', 'rl-tv rl-tv-card');
    this.#setState('loading');
  }

  /** The state the card is in. */
  get state(): TraceState {
    return this.#state;
  }

  #setState(s: TraceState): void {
    this.#state = s;
    hostOf(this.#el).dataset.state = s;
  }

  async #show(src: string): Promise<void> {
    const t = traceText(pageLang(this.#el));
    const root = this.#root;
    const signal = this.#ac.signal;
    try {
      const [entries, tr] = await Promise.all([loadManifest(), fetchTrace(src, t)]);
      const entry = entries.find((e) => e.file === src);
      root
        .append('p')
        .attr('class', 'rl-headline')
        .text(`${src}${entry ? `: ${t.shows(entry)}` : ''}`);
      const key = entry?.key ? parseHex32(entry.key) : undefined;
      const pred = await predictTrace(tr, { key, signal });
      const s = summarize(tr, pred);
      root.append('p').attr('class', 'rl-tv-agree').text(t.agreementAll(s.all, s.events));
      root.append('p').text(t.spread(s));
      const chart = root.append('div').attr('class', 'rl-tv-chart').node()!;
      renderBars(chart, s, t, chartWidth(chart));
      root.append('p').append('a').attr('href', viewerUrl(src)).text(`${t.open} →`);
      this.#setState('ready');
    } catch (err) {
      if (!signal.aborted) {
        this.#setState('error');
        root
          .append('p')
          .attr('role', 'alert')
          .attr('class', 'rl-errors')
          .text(err instanceof Error ? err.message : String(err));
      }
    }
  }

  dispose(): void {
    this.#ac.abort();
    this.#setState('disposed');
    this.#root.remove();
  }
}

/** The compact card for a chapter: counts, agreement, a link to the viewer. */
export async function mountTraceCard(el: HTMLElement, options: { src: string }): Promise<() => void> {
  const w = await TraceCard.mount(el, options);
  return () => w.dispose();
}

export const ReuseportTracesElement = islandElement(mountTraces, (el) => ({ trace: el.getAttribute('trace') ?? undefined }), ['trace', 'lang']);
export const ReuseportTraceElement = islandElement(mountTraceCard, (el) => ({ src: el.getAttribute('src') ?? '' }), ['src', 'lang']);

/** Registers `<reuseport-traces>` and `<reuseport-trace>` once. */
export function defineTraceElements(): void {
  defineIsland('reuseport-traces', ReuseportTracesElement);
  defineIsland('reuseport-trace', ReuseportTraceElement);
}
