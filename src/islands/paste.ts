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
 * The form is built by paste-form.ts and the words are paste-text.ts's; the
 * tables, bars and cards are drawn by render/ (table.ts, virtual-table.ts,
 * paste-bars.ts, explain-card.ts). This file keeps what was read and
 * answered, and asks the worker (`PasteSession`) and the key search.
 *
 * States (`data-state` on the element): `ready` (nothing runs: the form takes
 * input, and what was read and answered last is shown), `busy` (the worker
 * reads, answers or simulates: progress and Cancel), `disposed`.
 */
import { pageLang } from './site';
import { el, field } from './dom';
import {
  buildPasteForm,
  fillForm,
  formUrlState,
  readGroup,
  readLayout,
  secretMode,
  spreadSection,
  typedCounts,
  type GroupRequest,
  type PasteOptions,
  type PasteUi,
  type SecretMode,
} from './paste-form';
import { loadModel, parseBind, resolveNotes, resolveProfile, type Proto } from '../model/index';
import { say, sayBasis, sayRefusal, type Lang } from '../model/messages';
import { PasteSession, readUrlState, writeUrlState, MAX_URL_TEXT, MAX_FILE_BYTES, type UrlState } from '../model/paste';
import type { Answered, BadLine, NotedLine, ReadSummary, Row } from '../model/paste-protocol';
import { recoverKey, type Recovered } from '../model/recover';
import { explainView } from '../scene/explain-view';
import { renderExplain } from '../render/explain-card';
import { renderVirtualTable, type VirtualTable } from '../render/virtual-table';
import { renderPasteBars } from '../render/paste-bars';
import { tableElement } from '../render/table';
import { hex32 } from '../hex';
import { defineIsland, emit, hostOf, islandElement, type WidgetEventKind } from './element';
import { pasteText, type PasteText } from './paste-text';
import type { Columns, Role, SpreadAnswer } from '../model/paste';
import type { CallLog, Layout } from '../model/lookup';
import type { LayoutAnswered } from '../model/paste-protocol';
import { lookupView } from '../scene/dispatch/lookup';
import { renderLookup } from '../render/dispatch/lookup';

/** A column role as one select value (`endpoint:client`), and back. */
function roleKey(r: Role): string {
  return 'side' in r ? `${r.kind}:${r.side}` : r.kind;
}
function roleOf(key: string): Role {
  const [kind, side] = key.split(':') as [string, string | undefined];
  return (side ? { kind, side } : { kind }) as Role;
}

/** A paste longer than this goes to a file: the text box would freeze the page. */
const MAX_BOX_CHARS = 200_000;

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

    const on = { signal: this.#ac.signal };
    const { form, cancel, file, fileNote, text, kernel, radios, secret } = this.#ui;
    form.addEventListener(
      'submit',
      (e) => {
        e.preventDefault();
        this.#urlProblems = [];
        void this.analyse();
      },
      on,
    );
    cancel.addEventListener('click', () => this.#session.stop(), on);
    file.addEventListener('change', () => this.#onFile(), on);
    text.addEventListener(
      'drop',
      (e) => {
        const x = e.dataTransfer?.files?.[0];
        if (!x) return;
        e.preventDefault();
        const dt = new DataTransfer();
        dt.items.add(x);
        file.files = dt.files;
        this.#onFile();
      },
      on,
    );
    text.addEventListener(
      'dragover',
      (e) => {
        if (e.dataTransfer?.types.includes('Files')) e.preventDefault();
      },
      on,
    );
    text.addEventListener(
      'paste',
      (e) => {
        // A huge paste would freeze the text box: it becomes a file instead.
        const s = e.clipboardData?.getData('text/plain') ?? '';
        if (s.length <= MAX_BOX_CHARS) return;
        e.preventDefault();
        const dt = new DataTransfer();
        dt.items.add(new File([s], 'pasted.txt', { type: 'text/plain' }));
        file.files = dt.files;
        fileNote.textContent = t.pastedAsFile(s.length);
      },
      on,
    );
    kernel.addEventListener('input', () => this.#showProfile(), on);
    for (const r of radios.values()) r.addEventListener('change', () => this.#onMode(), on);
    secret.addEventListener(
      'change',
      () => {
        if (this.#mode() === 'none' && secret.value.trim()) radios.get('typed')!.checked = true;
      },
      on,
    );
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
    const { kernel, profileNote } = this.#ui;
    const lang = this.#lang;
    const k = kernel.value.trim();
    try {
      const p = resolveProfile(k);
      const notes = resolveNotes(k).map((n) => `${say(lang, 'note', n)}${lang === 'zh-CN' ? '。' : '.'}`);
      profileNote.textContent = [this.#t.profile(`${p.release.major}.${p.release.minor}`, sayBasis(lang, p.basis)), ...notes].join(' ');
    } catch (e) {
      profileNote.textContent = (e as Error).message;
    }
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

  // ---- rendering ----------------------------------------------------------
  /** A line's problem in this language: the model's reason, with its field and format in our words. */
  #sayReason(b: BadLine): string {
    const t = this.#t;
    const r = b.reason as Record<string, unknown>;
    const given: Record<string, string> = {};
    if (typeof r.field === 'string') given.field = t.fieldWords[r.field] ?? r.field;
    if (typeof r.format === 'string') given.format = t.formatWords[r.format] ?? r.format;
    return b.group === 'undecided' ? say(this.#lang, 'undecided', b.reason as never, given) : say(this.#lang, 'line_error', b.reason as never, given);
  }

  #renderRead(s: ReadSummary): HTMLElement {
    const t = this.#t;
    const lang = this.#lang;
    const session = this.#session;
    const sec = el('section', { class: 'rl-paste-read' });
    sec.append(el('h2', {}, t.readTitle));
    const dl = el('dl', { class: 'rl-facts' });
    const fact = (k: string, v: string | Node) => dl.append(el('dt', {}, k), el('dd', {}, v));
    fact(t.formatFound, s.detected ? t.formatName(s.detected.format, s.detected.header) : t.formatNone);
    if (s.detected?.evidence && s.detected.evidence.sample > 0) sec.append(el('p', { class: 'rl-hint rl-paste-why' }, t.formatWhy(s.detected)));
    fact(
      t.linesRead,
      t.lineCounts(s, (kind) => say(lang, 'skip', { kind } as never)),
    );
    const flipBtn = el('button', { type: 'button' }, t.flip);
    flipBtn.addEventListener('click', () => {
      this.#flip = !this.#flip;
      void this.analyse();
    });
    const side = el('span', {}, t.decision(s.decision, this.#flip), ' ');
    side.append(flipBtn);
    if (Object.keys(s.sides ?? {}).length) side.append(el('span', { class: 'rl-hint' }, ' ', t.sidesBy(s.sides)));
    fact(t.serverSide, side);
    if (s.listening) fact(t.listeningFound, s.listeningAddrs.join(', '));
    sec.append(dl);
    const cols = s.detected?.format === 'csv' ? (s.detected.columns as Columns | null) : null;
    if (cols) sec.append(this.#renderColumns(cols));
    if (s.partial) sec.append(el('p', { class: 'rl-warn' }, t.partial));
    if (s.cut) sec.append(el('p', { class: 'rl-warn' }, t.cut(s.cut)));
    if (s.bad + s.undecided > 0) {
      const det = el('details', { class: 'rl-paste-bad', open: s.rows === 0 });
      det.append(el('summary', {}, t.badTitle(s.bad + s.undecided)));
      const holder = el('div');
      det.append(holder);
      sec.append(det);
      this.#badTable?.dispose();
      this.#badTable = renderVirtualTable(holder, {
        caption: t.badTitle(s.bad + s.undecided),
        columns: t.badColumns,
        // The line's own text next to its number: after the reason, a long sentence, it sat scrolled out of view.
        rows: async (start, count) =>
          (await session.bad(start, count)).map((b: BadLine) => [
            String(b.line),
            b.text,
            this.#sayReason(b),
            // The format in the page's words ("地址对格式"), never its id ("pairs").
            b.format ? (t.formatWords[b.format] ?? b.format) : '–',
          ]),
        rowHeight: 30,
        // The reason is a sentence: it wraps, so the format column beside it stays in view.
        wrap: true,
      });
      this.#badTable.setCount(s.bad + s.undecided);
    }
    if (s.notes > 0) {
      const det = el('details', { class: 'rl-paste-notes', open: true });
      det.append(el('summary', {}, t.notesTitle(s.notes)));
      const holder = el('div');
      det.append(holder);
      sec.append(det);
      this.#notesTable?.dispose();
      this.#notesTable = renderVirtualTable(holder, {
        caption: t.notesTitle(s.notes),
        columns: t.notesColumns,
        rows: async (start, count) => (await session.notes(start, count)).map((x: NotedLine) => [String(x.line), say(lang, 'line_note', x.note)]),
        rowHeight: 30,
      });
      this.#notesTable.setCount(s.notes);
    }
    return sec;
  }

  /** The CSV columns as read, each with a choice of what it holds; a change reads the input again. */
  #renderColumns(cols: Columns): HTMLElement {
    const t = this.#t;
    const box = el('details', { class: 'rl-paste-cols', open: true });
    box.append(el('summary', {}, t.columnsTitle(cols.header)));
    const rows = cols.columns.map((c, i) => {
      const sel = el('select');
      sel.setAttribute('aria-label', t.columnRole(c.name));
      for (const [key, label] of t.roles) sel.append(el('option', { value: key }, label));
      sel.value = roleKey(c.role);
      sel.addEventListener('change', () => {
        this.#columns = { ...cols, columns: cols.columns.map((x, j) => (j === i ? { ...x, role: roleOf(sel.value) } : x)) };
        void this.analyse();
      });
      return [c.name, sel];
    });
    box.append(tableElement({ head: t.columnsHead, rows }));
    return box;
  }

  #renderBarsSection(): HTMLElement {
    const t = this.#t;
    const a = this.#answered;
    const spread = this.#spread;
    const layoutAnswered = this.#layoutAnswered;
    const bySocket = layoutAnswered?.counts ?? null;
    const counts = bySocket ?? a?.counts ?? a?.observed ?? this.#typedCounts();
    const sec = el('section', { class: 'rl-paste-bars' });
    sec.append(el('h2', {}, bySocket ? t.barsTitleSockets : t.barsTitle));
    const mismatch = layoutAnswered?.mismatch ?? a?.mismatch;
    if (mismatch) {
      const k = layoutAnswered?.mismatched ?? a?.mismatched ?? 0;
      const why = this.#sayReason({ line: 0, format: this.#summary?.detected?.format ?? null, group: 'line_error', reason: mismatch, text: '' });
      sec.append(el('p', { class: 'rl-warn' }, t.mismatched(k, why)));
    }
    if (!counts) {
      sec.append(el('p', {}, t.barsNeedSecret(spread ? t.spreadTitle : null)));
      return sec;
    }
    const which = bySocket ? t.barsSockets(this.#secretLabel()) : a?.counts ? t.barsUnder(this.#secretLabel()) : a?.observed ? t.barsObserved : t.barsTyped;
    sec.append(el('p', {}, which));
    const band = !bySocket && spread?.spread.exchangeable ? spread.spread.band : undefined;
    if (spread && !spread.spread.exchangeable) sec.append(el('p', { class: 'rl-hint' }, t.notExchangeable));
    renderPasteBars(sec, { counts, band, label: t.barsLabel(counts, band), axis: bySocket ? t.socketAxis : t.listenerAxis });
    const det = el('details');
    det.append(el('summary', {}, t.countsTable));
    const rows = counts.map((c, i) => {
      const b = band ?? spread?.spread.perListener.find((x) => x.listener === i);
      const inBand = b ? `${c < b.p5 ? t.below : c > b.p95 ? t.above : t.within} (${b.p5.toLocaleString()}–${b.p95.toLocaleString()})` : '–';
      return [String(i), c.toLocaleString(), inBand];
    });
    det.append(tableElement({ head: t.countsHead, rows }));
    sec.append(det);
    return sec;
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

  #renderRows(): HTMLElement {
    const t = this.#t;
    const summary = this.#summary;
    const sec = el('section', { class: 'rl-paste-rows' });
    sec.append(el('h2', {}, t.rowsTitle));
    if (!summary || summary.rows === 0) {
      sec.append(el('p', {}, t.noRows));
      return sec;
    }
    if (!this.#answered?.counts) sec.append(el('p', { class: 'rl-hint' }, t.rowsNeedSecret));
    const bar = el('div', { class: 'rl-paste-filter' });
    const filter = this.#filter;
    const q = el('input', { type: 'search', value: filter.query, placeholder: t.searchPlaceholder });
    const lf = el('input', { type: 'number', min: '0', value: filter.listener === null ? '' : String(filter.listener) });
    bar.append(field(this.#f('q'), t.search, q), field(this.#f('lf'), t.filterListener, lf, t.filterListenerHint));
    sec.append(bar);
    const count = el('p', { class: 'rl-hint' });
    count.setAttribute('aria-live', 'polite');
    sec.append(count);
    const holder = el('div');
    sec.append(holder, this.#explainBox);
    this.#table?.dispose();
    const table = renderVirtualTable(holder, {
      caption: t.rowsTitle,
      columns: this.#layoutAnswered ? t.rowColumnsSockets : t.rowColumns,
      rows: async (start, n) =>
        (await this.#session.rows(start, n)).map((r: Row) => [
          String(r.line),
          r.client,
          r.server,
          r.listener === null ? (this.#answered?.counts ? t.none : '–') : String(r.listener),
          r.observed === null ? '–' : String(r.observed),
        ]),
      action: { text: t.explain, label: (_i, c) => t.explainRow(c[0]!), run: (i) => void this.#explainRow(i) },
    });
    this.#table = table;
    const apply = async () => {
      const listener = lf.value.trim() === '' ? null : Number(lf.value);
      this.#filter = { listener: listener !== null && Number.isInteger(listener) && listener >= 0 ? listener : null, query: q.value.trim().slice(0, 200) };
      const n = await this.#session.filter(this.#filter);
      count.textContent = t.shown(n, summary.rows);
      table.setCount(n);
    };
    const later = () => {
      clearTimeout(this.#debounce);
      this.#debounce = window.setTimeout(() => void apply(), 150);
    };
    q.addEventListener('input', later);
    lf.addEventListener('input', later);
    void apply();
    return sec;
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
        const h = el('h3', { tabIndex: -1 }, t.explainTitle(r.line, this.#secretLabel()));
        explainBox.append(h);
        const card = el('div');
        explainBox.append(card);
        // A pasted layout's sockets are not listeners of a visualized group.
        const plan = { listenerOf: layoutAnswered.results.map(() => null) };
        renderLookup(card, t.layoutDescribe(layoutAnswered.sockets), lookupView(plan, layoutAnswered.results, r.explain, lang), 4, lang);
        h.focus();
        return;
      }
      const r = await this.#session.explain(i, req);
      const h = el('h3', { tabIndex: -1 }, t.explainTitle(r.line, this.#secretLabel()));
      explainBox.append(h);
      const card = el('div');
      explainBox.append(card);
      renderExplain(card, explainView(r.explain, lang), 4, t.card);
      h.focus();
    } catch (e) {
      explainBox.append(el('p', { class: 'rl-warn' }, (e as Error).message));
    }
  }

  #renderRecover(): HTMLElement {
    const t = this.#t;
    const sec = el('section', { class: 'rl-paste-recover' });
    sec.append(el('h2', {}, t.recoverTitle));
    const n = this.#summary?.observed ?? 0;
    sec.append(el('p', {}, n ? t.recoverLead(n) : t.recoverNeeds));
    if (!n) return sec;
    const btn = el('button', { type: 'button' }, t.recoverGo);
    const stop = el('button', { type: 'button', hidden: true }, t.cancel);
    const prog = el('progress', { max: 1, value: 0, hidden: true });
    prog.setAttribute('aria-label', t.recoverTitle);
    const note = el('p');
    note.setAttribute('aria-live', 'polite');
    const result = el('div');
    sec.append(el('div', { class: 'rl-actions' }, btn, stop), prog, note, result);
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
    return sec;
  }

  #showRecovered(box: HTMLElement, r: Recovered): void {
    const t = this.#t;
    const { secret, radios } = this.#ui;
    box.replaceChildren();
    box.append(el('p', {}, t.recovered(r)));
    if (r.values.length) {
      const ul = el('ul', { class: 'rl-candidates' });
      for (const v of r.values.slice(0, 16)) ul.append(el('li', {}, hex32(v)));
      box.append(ul);
    }
    if (r.candidates >= 1 && r.complete) {
      const use = el('button', { type: 'button' }, t.useRecovered(hex32(r.values[0]!)));
      use.addEventListener('click', () => {
        secret.value = hex32(r.values[0]!);
        radios.get('recovered')!.disabled = false;
        radios.get('recovered')!.checked = true;
        void this.answer();
      });
      box.append(use);
    }
  }

  #renderExport(): HTMLElement {
    const t = this.#t;
    const sec = el('section', { class: 'rl-paste-export' });
    sec.append(el('h2', {}, t.exportTitle));
    const csv = el('button', { type: 'button' }, t.exportCsv);
    const json = el('button', { type: 'button' }, t.exportJson);
    const share = el('button', { type: 'button' }, t.share);
    const note = el('p', { class: 'rl-hint' });
    note.setAttribute('aria-live', 'polite');
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
    sec.append(el('div', { class: 'rl-actions' }, csv, json, share), note);
    return sec;
  }

  #urlState(): UrlState {
    return formUrlState(this.#ui, this.#flip, this.#source);
  }

  /** The layout's sockets: each one's bind and listen answers, and what it receives. */
  #renderLayout(a: LayoutAnswered): HTMLElement {
    const t = this.#t;
    const lang = this.#lang;
    const sec = el('section', { class: 'rl-paste-sockets' });
    sec.append(el('h2', {}, t.socketsTitle));
    sec.append(el('p', {}, t.socketsLead(a.sockets, a.unrouted, this.#summary!.rows)));
    const rows = a.results.slice(0, 4096).map((r) => {
      const where = r.family === 'inet6' ? `[${r.addr}]:${r.port}` : `${r.addr}:${r.port}`;
      const call = (x: typeof r.bind) => (x ? `${x.errno}: ${sayRefusal(lang, x)}` : t.callOk);
      return [
        String(r.socket),
        where,
        call(r.bind),
        r.proto === 'tcp' ? call(r.listen) : '–',
        r.group === null ? '–' : t.groupMember(r.group, r.member ?? 0),
        a.counts ? (a.counts[r.socket] ?? 0).toLocaleString() : '–',
      ];
    });
    sec.append(tableElement({ caption: t.socketsCaption, head: t.socketsHead, rows }));
    return sec;
  }

  #renderAll(): void {
    const summary = this.#summary;
    if (!summary) return;
    const layoutAnswered = this.#layoutAnswered;
    this.#ui.out.replaceChildren(
      this.#renderRead(summary),
      ...(layoutAnswered ? [this.#renderLayout(layoutAnswered)] : []),
      spreadSection(this.#t, this.#lang, this.#spread, !!(summary.rows > 0 && this.#running)),
      this.#renderBarsSection(),
      this.#renderRows(),
      this.#renderRecover(),
      this.#renderExport(),
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
