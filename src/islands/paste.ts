/**
 * The paste analyser: connections copied from a real server (ss, netstat,
 * conntrack, tcpdump, /proc/net/tcp, CSV, the agent's traces), read by the
 * model's parsers in a worker, answered first with what holds for every
 * secret and then, under a named secret only, connection by connection.
 *
 * `mountPaste(el, options)` returns `dispose`; `<reuseport-paste>` is the
 * same widget as a custom element (attributes: kernel, proto, listeners,
 * text, from-url).
 *
 * The form is built and wired by paste-form.ts; the words are
 * render/paste-text.ts's; the sections are drawn by render/ (paste-read.ts,
 * paste-answers.ts, paste-actions.ts, explain-card.ts) from the facts of
 * scene/paste-view.ts. This file keeps what was read and answered, asks the
 * worker (`PasteSession`) and the key search, and says what each button does.
 *
 * States (`data-state` on the element): `ready` (nothing runs: the form takes
 * input, and what was read and answered last is shown), `busy` (the worker
 * reads, answers or simulates: progress and Cancel), `disposed`.
 */
import { pageLang } from './site';
import { el } from './dom';
import {
  buildPasteForm,
  fillForm,
  formUrlState,
  readGroup,
  readLayout,
  secretMode,
  showProfile,
  typedCounts,
  wireForm,
  type GroupRequest,
  type PasteOptions,
  type PasteUi,
  type SecretMode,
} from './paste-form';
import { loadModel, parseBind, type Proto } from '../model/index';
import type { Lang } from '../model/messages';
import { PasteSession, readUrlState, writeUrlState, MAX_URL_TEXT, MAX_FILE_BYTES, type UrlState } from '../model/paste';
import type { Answered, ReadSummary } from '../model/paste-protocol';
import { recoverKey, type Recovered } from '../model/recover';
import { explainView } from '../scene/explain-view';
import { renderExplain } from '../render/explain-card';
import type { VirtualTable } from '../render/virtual-table';
import { renderReadSection } from '../render/paste-read';
import { barsSection, explainedRow, rowsSection, socketsSection, spreadSection } from '../render/paste-answers';
import { exportSection, recoverSection, showRecovered } from '../render/paste-actions';
import { hex32 } from '../hex';
import { defineIsland, emit, hostOf, islandElement, type WidgetEventKind } from './element';
import { pasteText, type PasteText } from '../render/paste-text';
import type { Columns, SpreadAnswer } from '../model/paste';
import type { CallLog, Layout } from '../model/lookup';
import type { LayoutAnswered } from '../model/paste-protocol';
import { lookupView } from '../scene/dispatch/lookup';
import { renderLookup } from '../render/dispatch/lookup';

/** Where the analyser is (see the module documentation). */
export type PasteState = 'ready' | 'busy' | 'disposed';

/** The paste analyser on a page; made by {@link PasteWidget.mount}, removed by {@link PasteWidget.dispose}. */
export class PasteWidget {
  static #uid = 0;

  readonly #host: HTMLElement;
  readonly #lang: Lang;
  readonly #t: PasteText;
  readonly #id: string;
  readonly #ac = new AbortController();
  readonly #root: HTMLDivElement;
  readonly #ui: PasteUi;
  readonly #session = new PasteSession();
  readonly #explainBox: HTMLDivElement;

  #state: PasteState = 'ready';
  #source: { text: string } | { file: File } | undefined;
  #flip = false;
  /** CSV columns the reader chose (null: detect them). */
  #columns: Columns | null = null;
  #summary: ReadSummary | undefined;
  #answered: Answered | undefined;
  /** The layout in force for the last read (null: one group), and its answers. */
  #layout: CallLog | Layout | null = null;
  #layoutAnswered: LayoutAnswered | undefined;
  #spread: SpreadAnswer | undefined;
  #recovered: Recovered | undefined;
  #running: AbortController | undefined;
  #table: VirtualTable | undefined;
  #badTable: VirtualTable | undefined;
  #notesTable: VirtualTable | undefined;
  #filter: { listener: number | null; query: string } = { listener: null, query: '' };
  /** The rows' filter waits for typing to pause. */
  #debounce = 0;
  /** Refused URL parameters stay named beside later problems until the reader submits the form. */
  #urlProblems: string[] = [];

  /** Loads the model and shows the analyser under `host`; reads the text given (or the page URL's) at once. */
  static async mount(host: HTMLElement, options: PasteOptions = {}): Promise<PasteWidget> {
    await loadModel();
    const w = new PasteWidget(host, options);
    w.#start(options);
    return w;
  }

  private constructor(host: HTMLElement, options: PasteOptions) {
    this.#host = host;
    this.#lang = pageLang(host);
    this.#t = pasteText(this.#lang);
    const t = this.#t;
    this.#id = `rl-paste-${++PasteWidget.#uid}`;
    this.#root = el('div', { class: 'rl-paste' });
    host.append(this.#root);
    this.#ui = buildPasteForm(this.#root, t, (n) => this.#f(n), options);
    this.#explainBox = el('div', { class: 'rl-paste-explain' });
    this.#explainBox.setAttribute('aria-live', 'polite');

    wireForm(this.#ui, t, this.#ac.signal, {
      submit: () => {
        this.#urlProblems = [];
        void this.analyse();
      },
      cancel: () => this.#session.stop(),
      file: () => this.#onFile(),
      kernel: () => this.#showProfile(),
      mode: () => this.#onMode(),
    });
    this.#showProfile();
  }

  /** The state the analyser is in. */
  get state(): PasteState {
    return this.#state;
  }

  #setState(s: PasteState): void {
    this.#state = s;
    hostOf(this.#host).dataset.state = s;
  }

  /** An id of this widget's: `<id>-<name>`. */
  #f(name: string): string {
    return `${this.#id}-${name}`;
  }

  /** The page URL's settings (when asked for), then a first read of any text given. */
  #start(options: PasteOptions): void {
    if (options.fromUrl) this.#applyUrl();
    if (this.#ui.text.value.trim()) void this.analyse();
    else {
      this.#setStatus(this.#t.ready);
      this.#setState('ready');
    }
  }

  /** Fills the form from the page URL's settings; the refused ones are named. */
  #applyUrl(): void {
    const st = readUrlState(location.href);
    this.#urlProblems = st.errors.map((e) => this.#t.urlBad(e.param, e.value));
    this.#fail([]);
    if (fillForm(this.#ui, st.state)) this.#flip = true;
    this.#showProfile();
  }

  #setStatus(s: string): void {
    this.#ui.status.textContent = s;
  }

  /** Lists `given` problems (after the URL's refused parameters) in the error box; clears it when there are none. */
  #fail(given: string[]): void {
    const errors = this.#ui.errors;
    errors.replaceChildren();
    const messages = [...this.#urlProblems, ...given];
    if (!messages.length) return;
    const ul = el('ul');
    ul.setAttribute('role', 'alert');
    for (const m of messages) ul.append(el('li', {}, m));
    errors.append(ul);
  }

  #busy(on: boolean): void {
    const { cancel, go, progress } = this.#ui;
    this.#setState(on ? 'busy' : 'ready');
    cancel.hidden = !on;
    go.disabled = on;
    progress.hidden = !on;
    if (!on) progress.value = 0;
  }

  #onProgress = (p: { phase: string; done: number; total: number }): void => {
    const progress = this.#ui.progress;
    progress.max = Math.max(1, p.total);
    progress.value = p.done;
    this.#setStatus(this.#t.working(p.phase, p.done, p.total));
  };

  #mode(): SecretMode {
    return secretMode(this.#ui);
  }

  #showProfile(): void {
    showProfile(this.#ui, this.#t, this.#lang);
  }

  #onFile(): void {
    const { file, fileNote } = this.#ui;
    this.#columns = null;
    const x = file.files?.[0];
    fileNote.textContent = x ? this.#t.fileChosen(x.name, x.size) : '';
  }

  #onMode(): void {
    const { secret, inner } = this.#ui;
    const m = this.#mode();
    if (m === 'random') {
      secret.value = hex32(crypto.getRandomValues(new Uint32Array(1))[0]!);
      inner.value = hex32(crypto.getRandomValues(new Uint32Array(1))[0]!);
    }
    if (this.#summary?.rows) void this.answer();
  }

  /** Checks the group and secret fields; every problem names its field. */
  #readGroup(): { problems: string[]; request?: GroupRequest } {
    return readGroup(this.#ui, this.#t, this.#summary);
  }

  // ---- drawing (render/paste-*.ts draws; this wires) ----------------------
  #readSection(s: ReadSummary): HTMLElement {
    const session = this.#session;
    this.#badTable?.dispose();
    this.#notesTable?.dispose();
    const r = renderReadSection({
      summary: s,
      t: this.#t,
      lang: this.#lang,
      flipped: this.#flip,
      onFlip: () => {
        this.#flip = !this.#flip;
        void this.analyse();
      },
      onColumns: (columns) => {
        this.#columns = columns;
        void this.analyse();
      },
      bad: (start, count) => session.bad(start, count),
      notes: (start, count) => session.notes(start, count),
    });
    this.#badTable = r.bad;
    this.#notesTable = r.notes;
    return r.section;
  }

  #barsSection(): HTMLElement {
    const a = this.#answered;
    const layoutAnswered = this.#layoutAnswered;
    const bySocket = layoutAnswered?.counts ?? null;
    const mismatch = layoutAnswered?.mismatch ?? a?.mismatch;
    return barsSection({
      t: this.#t,
      lang: this.#lang,
      counts: bySocket ?? a?.counts ?? a?.observed ?? this.#typedCounts(),
      source: bySocket ? 'sockets' : a?.counts ? 'secret' : a?.observed ? 'observed' : 'typed',
      secret: this.#secretLabel(),
      mismatch: mismatch
        ? { count: layoutAnswered?.mismatched ?? a?.mismatched ?? 0, reason: mismatch, format: this.#summary?.detected?.format ?? null }
        : null,
      spread: this.#spread,
    });
  }

  #secretLabel(): string {
    const t = this.#t;
    const m = this.#mode();
    const v = this.#ui.secret.value.trim();
    return m === 'random' ? t.randomBootLabel(v) : m === 'recovered' ? t.recoveredLabel(v) : t.typedLabel(v);
  }

  #typedCounts(): number[] | null {
    return typedCounts(this.#ui);
  }

  #rowsSection(): HTMLElement {
    const summary = this.#summary;
    this.#table?.dispose();
    this.#table = undefined;
    const r = rowsSection({
      t: this.#t,
      summary,
      answered: () => !!this.#answered?.counts,
      sockets: !!this.#layoutAnswered,
      filter: this.#filter,
      ids: { query: this.#f('q'), listener: this.#f('lf') },
      explainBox: this.#explainBox,
      rows: (start, n) => this.#session.rows(start, n),
      onFilter: (query, listener) => {
        clearTimeout(this.#debounce);
        this.#debounce = window.setTimeout(() => void apply(query, listener), 150);
      },
      onExplain: (i) => void this.#explainRow(i),
    });
    const shown = r.shown;
    if (!r.table || !shown || !summary) return r.section;
    this.#table = r.table;
    const apply = async (query: string, listenerText: string) => {
      const listener = listenerText.trim() === '' ? null : Number(listenerText);
      this.#filter = { listener: listener !== null && Number.isInteger(listener) && listener >= 0 ? listener : null, query: query.trim().slice(0, 200) };
      const n = await this.#session.filter(this.#filter);
      shown(n, summary.rows);
    };
    const f = this.#filter;
    void apply(f.query, f.listener === null ? '' : String(f.listener));
    return r.section;
  }

  async #explainRow(i: number): Promise<void> {
    const t = this.#t;
    const lang = this.#lang;
    const explainBox = this.#explainBox;
    explainBox.replaceChildren();
    const g = this.#readGroup();
    const req = g.problems.length ? undefined : g.request;
    if (!req?.keys) {
      explainBox.append(el('p', {}, t.explainNeedsSecret));
      return;
    }
    try {
      const layoutAnswered = this.#layoutAnswered;
      if (this.#layout && layoutAnswered) {
        const r = await this.#session.explainLayout(i);
        // A pasted layout's sockets are not listeners of a visualized group.
        const plan = { listenerOf: layoutAnswered.results.map(() => null) };
        const view = lookupView(plan, layoutAnswered.results, r.explain, lang);
        explainedRow(explainBox, t.explainTitle(r.line, this.#secretLabel()), (card) =>
          renderLookup(card, t.layoutDescribe(layoutAnswered.sockets), view, 4, lang),
        );
        return;
      }
      const r = await this.#session.explain(i, req);
      explainedRow(explainBox, t.explainTitle(r.line, this.#secretLabel()), (card) => renderExplain(card, explainView(r.explain, lang), 4, t.card));
    } catch (e) {
      explainBox.append(el('p', { class: 'rl-warn' }, (e as Error).message));
    }
  }

  #recoverSection(): HTMLElement {
    const t = this.#t;
    const { section, controls } = recoverSection(t, this.#summary?.observed ?? 0);
    if (!controls) return section;
    const { start: btn, stop, progress: prog, note, result } = controls;
    if (this.#recovered) this.#showRecovered(result, this.#recovered);
    btn.addEventListener('click', async () => {
      const req = this.#readGroup();
      if (req.problems.length || !req.request) {
        this.#fail(req.problems);
        return;
      }
      const ac = new AbortController();
      btn.disabled = true;
      stop.hidden = false;
      prog.hidden = false;
      stop.onclick = () => ac.abort();
      try {
        const obs = await this.#session.observations();
        const r = await recoverKey(req.request.kernel, req.request.group, obs, {
          signal: ac.signal,
          onProgress: (p) => {
            prog.max = p.total;
            prog.value = p.searched;
            note.textContent = t.recoverProgress(p.searched / p.total, p.eta);
          },
        });
        this.#recovered = r;
        note.textContent = '';
        this.#showRecovered(result, r);
      } catch (e) {
        note.textContent = t.recoverFailed((e as Error).message);
      } finally {
        btn.disabled = false;
        stop.hidden = true;
        prog.hidden = true;
      }
    });
    return section;
  }

  #showRecovered(box: HTMLElement, r: Recovered): void {
    const { secret, radios } = this.#ui;
    showRecovered(box, r, this.#t, (value) => {
      secret.value = value;
      radios.get('recovered')!.disabled = false;
      radios.get('recovered')!.checked = true;
      void this.answer();
    });
  }

  #exportSection(): HTMLElement {
    const t = this.#t;
    const { section, csv, json, share, note } = exportSection(t);
    const download = async (kind: 'csv' | 'json') => {
      const blob = await this.#session.export(kind, { secret: this.#answered?.counts ? this.#secretLabel() : null, spread: this.#spread ?? null });
      const a = el('a', { href: URL.createObjectURL(blob), download: `reuseport-connections.${kind}` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    };
    csv.addEventListener('click', () => void download('csv'));
    json.addEventListener('click', () => void download('json'));
    share.addEventListener('click', async () => {
      const st = this.#urlState();
      // Input too large for a link (or a file): the link carries the settings alone, as the message says.
      const whole = st.text === null ? undefined : writeUrlState(location.href, st);
      const url = whole ?? writeUrlState(location.href, { ...st, text: null })!;
      history.replaceState(null, '', url);
      let said: string;
      try {
        await navigator.clipboard.writeText(url);
        said = t.copied;
      } catch {
        said = t.linkInAddressBar;
      }
      note.textContent = whole ? said : `${t.tooBigForUrl(MAX_URL_TEXT)} ${said}`;
    });
    return section;
  }

  #urlState(): UrlState {
    return formUrlState(this.#ui, this.#flip, this.#source);
  }

  #renderAll(): void {
    const summary = this.#summary;
    if (!summary) return;
    const layoutAnswered = this.#layoutAnswered;
    this.#ui.out.replaceChildren(
      this.#readSection(summary),
      ...(layoutAnswered ? [socketsSection(layoutAnswered, summary, this.#t, this.#lang)] : []),
      spreadSection(this.#t, this.#lang, this.#spread, !!(summary.rows > 0 && this.#running)),
      this.#barsSection(),
      this.#rowsSection(),
      this.#recoverSection(),
      this.#exportSection(),
    );
  }

  // ---- the work -----------------------------------------------------------
  /** Answers what was read again under the group and secret the form says now. */
  async answer(): Promise<void> {
    const g = this.#readGroup();
    this.#fail(g.problems);
    if (!g.request) return;
    // With a problem in the secret, only what holds for every secret is shown.
    if (g.problems.length) g.request.keys = null;
    this.#answered = await this.#session.answer(g.request);
    const answered = this.#answered;
    const layout = this.#layout;
    if (layout)
      this.#layoutAnswered = await this.#session.answerLayout({
        kernel: g.request.kernel,
        layout,
        keys: g.request.keys,
        proto: this.#ui.proto.value as Proto,
        cpu: 0,
      });
    this.#renderAll();
    this.#setStatus(this.#t.answeredStatus(this.#summary!, answered, g.request.keys ? this.#secretLabel() : null));
  }

  /** Reads the text or file, answers it, and simulates the spread; the page gets each answer as it comes. */
  async analyse(): Promise<void> {
    if (this.#running || this.#state === 'disposed') return;
    const t = this.#t;
    const session = this.#session;
    const { bind, file, text, layoutText, format, kernel, proto, listeners, closed } = this.#ui;
    this.#fail([]);
    const problems: string[] = [];
    const bindText = bind.value.trim();
    if (bindText && !/^:\d{1,5}$/.test(bindText)) {
      try {
        parseBind(bindText);
      } catch (e) {
        problems.push(t.bindBad((e as Error).message));
      }
    }
    const chosen = file.files?.[0];
    if (chosen && chosen.size > MAX_FILE_BYTES) problems.push(t.fileTooBig(chosen.size, MAX_FILE_BYTES));
    const source: { text: string } | { file: File } = chosen && !problems.length ? { file: chosen } : { text: text.value };
    this.#source = source;
    if ('text' in source && source.text.trim() === '') problems.push(t.nothing);
    const g0 = this.#readGroup();
    problems.push(...g0.problems);
    this.#layout = null;
    if (layoutText.value.trim() !== '') {
      const r = readLayout(layoutText.value);
      if (r.error) problems.push(t.layoutBad(r.error));
      else this.#layout = r.layout!;
    }
    if (problems.length) {
      this.#fail(problems);
      this.#setStatus(t.notRun);
      return;
    }
    this.#running = new AbortController();
    this.#busy(true);
    this.#explainBox.replaceChildren();
    const t0 = performance.now();
    const tell = (name: WidgetEventKind, detail: object) => emit(this.#host, name, { ms: performance.now() - t0, ...detail });
    tell('started', {});
    try {
      const summary = await session.read(
        source,
        { format: format.value === 'auto' ? null : format.value, columns: this.#columns, bind: bindText || null, flip: this.#flip },
        this.#onProgress,
      );
      this.#summary = summary;
      this.#answered = undefined;
      this.#layoutAnswered = undefined;
      this.#spread = undefined;
      this.#recovered = undefined;
      if (summary.trace) {
        // A trace says its own group: the form takes it, so the answers are for what was recorded.
        kernel.value = summary.trace.kernel;
        proto.value = summary.trace.proto;
        listeners.value = String(summary.trace.listeners);
        closed.value = summary.trace.closed.join(',');
        this.#showProfile();
      }
      if (summary.rows === 0) {
        this.#renderAll();
        this.#setStatus(t.readStatus(summary));
        tell('completed', { spread: null, verdict: null });
        return;
      }
      const g = this.#readGroup();
      this.#fail(g.problems);
      if (!g.request) {
        this.#renderAll();
        return;
      }
      // A problem with the secret (an IPv6 key missing) leaves the secret-free answers standing.
      if (g.problems.length) g.request.keys = null;
      this.#answered = await session.answer(g.request, this.#onProgress);
      const answered = this.#answered;
      const layout = this.#layout;
      this.#layoutAnswered = layout
        ? await session.answerLayout({ kernel: g.request.kernel, layout, keys: g.request.keys, proto: proto.value as Proto, cpu: 0 })
        : undefined;
      this.#renderAll();
      tell('answered', { lines: summary.lines, rows: summary.rows, counts: answered.counts, observed: answered.observed });
      this.#spread = await session.spread(g.request, null, answered.observed ?? this.#typedCounts(), this.#onProgress);
      const spread = this.#spread;
      this.#renderAll();
      this.#setStatus(t.answeredStatus(summary, answered, g.request.keys ? this.#secretLabel() : null));
      tell('completed', { spread: spread.spread, verdict: spread.comparison?.verdict ?? null });
    } catch (e) {
      this.#fail([(e as Error).message]);
      this.#setStatus(t.notRun);
      this.#running = undefined;
      // What was read and answered before the failure stays on the page.
      if (this.#summary) this.#renderAll();
    } finally {
      if (!this.#ac.signal.aborted) this.#busy(false);
      this.#running = undefined;
    }
  }

  dispose(): void {
    this.#ac.abort();
    clearTimeout(this.#debounce);
    this.#table?.dispose();
    this.#badTable?.dispose();
    this.#notesTable?.dispose();
    this.#session.dispose();
    this.#setState('disposed');
    this.#root.remove();
  }
}

export async function mountPaste(host: HTMLElement, options: PasteOptions = {}): Promise<() => void> {
  const w = await PasteWidget.mount(host, options);
  return () => w.dispose();
}

/** `<reuseport-paste kernel="6.18" proto="tcp" listeners="8" text="..." from-url>`. */
export const ReusePortPasteElement = islandElement(
  mountPaste,
  (e): PasteOptions => ({
    kernel: e.getAttribute('kernel') ?? undefined,
    proto: (e.getAttribute('proto') as Proto | null) ?? undefined,
    listeners: e.hasAttribute('listeners') ? Number(e.getAttribute('listeners')) : undefined,
    text: e.getAttribute('text') ?? undefined,
    fromUrl: e.hasAttribute('from-url'),
  }),
  ['kernel', 'proto', 'listeners', 'text', 'lang'],
);

export function definePasteElement(): void {
  defineIsland('reuseport-paste', ReusePortPasteElement);
}

export type { PasteText };
