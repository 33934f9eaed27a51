/**
 * "Your server": `<reuseport-server kernel="6.18">`. The reader pastes
 * `ss -tanpe` (or `ss -ltnpe` and `ss -tnpe`), drops a `reuseport-agent
 * observe` report, or gives per-worker counts; the model reads and
 * diagnoses it (src/model/diagnose.ts) and the widget shows the scene
 * (src/scene/server-view.ts, drawn by src/render/server.ts): the verdict
 * with its evidence and links, per-worker counts against the hashing band,
 * the sockets and their holders, the queues over time. When the owners
 * allow it, "Find the key" runs the labelled key search in Web Workers with
 * progress and Stop.
 *
 * States (`data-state` on the element): `ready` (nothing read yet), `reading`
 * (the input is read and diagnosed in the worker), `diagnosed` (the verdict
 * and its scene are shown), `searching` (the key search runs: progress and
 * Stop), `error` (the input or the search failed: the alert says why),
 * `disposed`.
 *
 * Events: `reuseport:answered` `{verdict}`, `reuseport:started` `{search}`,
 * `reuseport:completed` `{verdict, complete}`, `reuseport:error` `{message}`.
 */
import { readObserveReport, ServerSession, type CountsDiagnosis, type Diagnosis, type PreparedView, type Snapshot } from '../model/diagnose';
import { countsView, snapshotView } from '../scene/server-view';
import { renderServer } from '../render/server';
import { defineIsland, emit, hostOf, islandElement } from './element';
import { el, field, runStatus } from './dom';
import { pageLang, siteUrl } from './site';
import { serverText, type ServerText } from './server-text';
import type { Lang } from '../model/messages';

/** The widget's settings (its attributes). */
export interface ServerOptions {
  /** The kernel whose rules are used: a profile or `uname -r`. @default "6.18" */
  kernel: string;
}

/** Where the widget is (see the module documentation). */
export type ServerState = 'ready' | 'reading' | 'diagnosed' | 'searching' | 'error' | 'disposed';

/** Files larger than this are refused (a million lines of ss is about 200 MB; the page takes a quarter of that). */
const MAX_FILE = 64 * 1024 * 1024;

/** The form, the status lines and the output area, under `host`. */
function buildServerUi(host: HTMLElement, t: ServerText, options: ServerOptions) {
  const uid = Math.random().toString(36).slice(2, 8);
  const root = host.appendChild(el('div', { class: 'rl-srv' }));
  const form = root.appendChild(el('form', { class: 'rl-form rl-srv-form', noValidate: true }));
  const text = el('textarea', { rows: 8, spellcheck: false });
  text.setAttribute('wrap', 'off');
  const textField = form.appendChild(field(`rl-srv-text-${uid}`, t.input, text, t.inputHint));
  const file = el('input', { type: 'file' });
  file.setAttribute('accept', '.txt,.json,.log,text/*,application/json');
  textField.append(el('label', { class: 'rl-file' }, t.file, file));
  const row = form.appendChild(el('div', { class: 'rl-srv-row' }));
  const kernel = el('input', { value: options.kernel, spellcheck: false, size: 14 });
  row.append(field(`rl-srv-kernel-${uid}`, t.kernel, kernel, t.kernelHint));
  const port = el('input', { inputMode: 'numeric', size: 6, spellcheck: false });
  row.append(field(`rl-srv-port-${uid}`, t.port, port, t.portHint));
  const actions = form.appendChild(el('div', { class: 'rl-srv-actions' }));
  const go = actions.appendChild(el('button', { type: 'submit', class: 'rl-primary' }, t.diagnose));
  const { status, bar, error } = runStatus(root);
  const read = root.appendChild(el('p', { class: 'rl-srv-read' }));
  read.setAttribute('aria-live', 'polite');
  const searchBox = root.appendChild(el('div', { class: 'rl-srv-search' }));
  const offer = searchBox.appendChild(el('p', { class: 'rl-hint' }));
  const find = searchBox.appendChild(el('button', { type: 'button' }, t.search));
  const stop = searchBox.appendChild(el('button', { type: 'button' }, t.stop));
  searchBox.hidden = true;
  const out = root.appendChild(el('div', { class: 'rl-srv-out' }));
  return { root, form, text, file, kernel, port, go, status, bar, error, read, searchBox, offer, find, stop, out };
}

type ServerUi = ReturnType<typeof buildServerUi>;

/** One mounted widget: its elements, the session worker and what was read; removed by {@link ServerWidget.dispose}. */
export class ServerWidget {
  readonly #el: HTMLElement;
  readonly #lang: Lang;
  readonly #t: ServerText;
  readonly #session = new ServerSession();
  readonly #ac = new AbortController();
  #state: ServerState = 'ready';
  /** The snapshot diagnosed and the kernel it was diagnosed under, for the key search. */
  #current?: { kernel: string; snapshot: Snapshot };
  #abort?: AbortController;
  readonly #ui: ServerUi;

  constructor(el: HTMLElement, options: ServerOptions) {
    this.#el = el;
    this.#lang = pageLang(el);
    this.#t = serverText(this.#lang);
    const ui = buildServerUi(el, this.#t, options);
    this.#ui = ui;
    const on = { signal: this.#ac.signal };
    ui.form.addEventListener(
      'submit',
      (e) => {
        e.preventDefault();
        void this.diagnose(ui.text.value);
      },
      on,
    );
    ui.file.addEventListener(
      'change',
      () => {
        const f = ui.file.files?.[0];
        if (!f) return;
        if (f.size > MAX_FILE) return this.#fail(this.#t.fileTooBig(f.size));
        void f.text().then((s) => {
          ui.text.value = s.length > 200_000 ? `${s.slice(0, 200_000)}\n…` : s;
          void this.diagnose(s);
        });
      },
      on,
    );
    ui.find.addEventListener('click', () => void this.search(), on);
    ui.stop.addEventListener('click', () => this.#abort?.abort(), on);
    this.#set('ready');
  }

  /** The state the widget is in. */
  get state(): ServerState {
    return this.#state;
  }

  #set(state: ServerState): void {
    if (this.#state === 'disposed') return;
    this.#state = state;
    hostOf(this.#el).dataset.state = state;
    const ui = this.#ui;
    const busy = state === 'reading' || state === 'searching';
    ui.go.disabled = busy;
    ui.find.disabled = busy;
    ui.find.hidden = state === 'searching';
    ui.stop.hidden = state !== 'searching';
    ui.bar.hidden = state !== 'searching';
  }

  #fail(message: string): void {
    const ui = this.#ui;
    ui.error.textContent = this.#t.failed(message);
    ui.error.hidden = false;
    this.#set('error');
    emit(this.#el, 'error', { message });
  }

  #href = (path: string) => siteUrl(path, true, this.#el);

  #kernel(): string {
    return this.#ui.kernel.value.trim() || '6.18';
  }

  /** Reads `text` and shows the diagnosis without a key search. */
  async diagnose(text: string): Promise<void> {
    if (this.#state === 'reading' || this.#state === 'searching') return;
    const ui = this.#ui;
    const t = this.#t;
    const portText = ui.port.value.trim();
    const port = portText === '' ? undefined : Number(portText);
    ui.port.setAttribute('aria-invalid', 'false');
    if (port !== undefined && !(Number.isInteger(port) && port >= 1 && port <= 65535)) {
      ui.port.setAttribute('aria-invalid', 'true');
      ui.error.textContent = t.portBad;
      ui.error.hidden = false;
      return;
    }
    ui.error.hidden = true;
    ui.searchBox.hidden = true;
    ui.status.textContent = '';
    this.#current = undefined;
    this.#set('reading');
    try {
      const report = readObserveReport(text);
      if (report) {
        const kernel = report.kernelRelease || this.#kernel();
        ui.read.textContent = t.readReport(report.kernelRelease);
        const prepared = await this.#session.prepare(kernel, report.snapshot);
        this.#current = { kernel, snapshot: report.snapshot };
        if (report.key !== null && prepared.searchable) {
          ui.status.textContent = t.reportKey;
          await this.#showSnapshot(await this.#session.finishWithKey(report.key), report.snapshot);
        } else await this.#showPrepared(prepared, report.snapshot);
        return;
      }
      const input = await this.#session.read(text, port);
      if (input.kind === 'counts') {
        ui.read.textContent = t.readCounts(input.counts.length);
        const c = await this.#session.counts(input.counts);
        this.#showCounts(c, input.counts, input.labels);
        return;
      }
      const notes = [t.readSockets(input)];
      if (!input.ownersShown) notes.push(t.noOwners);
      if (input.badCount) notes.push(t.badLines(input.badCount, input.bad[0]?.line ?? 0));
      ui.read.textContent = notes.join(' ');
      const kernel = this.#kernel();
      const prepared = await this.#session.prepare(kernel, input.snapshot);
      this.#current = { kernel, snapshot: input.snapshot };
      await this.#showPrepared(prepared, input.snapshot);
    } catch (err) {
      this.#fail(err instanceof Error ? err.message : String(err));
    }
  }

  async #showPrepared(p: PreparedView, snapshot: Snapshot): Promise<void> {
    const ui = this.#ui;
    await this.#showSnapshot(p.diagnosis, snapshot);
    if (p.searchable && p.plan) {
      ui.offer.textContent = this.#t.searchOffer(p.plan.connections, p.plan.labels, p.plan.members);
      ui.searchBox.hidden = false;
    }
  }

  /** The band hashing gives one worker, from the model's judgement of the per-worker counts (null when there is none to judge). */
  async #band(d: Diagnosis): Promise<CountsDiagnosis | null> {
    const members = d.group ? d.listeners.filter((l) => l.local === d.group).length : 0;
    const counts = d.workers.map((w) => w.connections);
    if (members < 2 || counts.length === 0 || counts.length > members || d.verdict.kind === 'shared-listener') return null;
    try {
      return await this.#session.counts(counts, members);
    } catch {
      return null;
    }
  }

  async #showSnapshot(d: Diagnosis, snapshot: Snapshot): Promise<void> {
    const view = snapshotView(this.#lang, this.#t, d, snapshot, await this.#band(d));
    renderServer(this.#ui.out, view, this.#t.headings, this.#href);
    this.#set('diagnosed');
    emit(this.#el, 'answered', { verdict: d.verdict.kind });
  }

  #showCounts(c: CountsDiagnosis, counts: number[], labels: string[]): void {
    renderServer(this.#ui.out, countsView(this.#lang, this.#t, c, counts, labels), this.#t.headings, this.#href);
    this.#set('diagnosed');
    emit(this.#el, 'answered', { verdict: c.verdict });
  }

  /** The labelled key search over the snapshot diagnosed, then the diagnosis with its key. */
  async search(): Promise<void> {
    const cur = this.#current;
    if (!cur || this.#state === 'searching') return;
    const ui = this.#ui;
    const t = this.#t;
    this.#abort = new AbortController();
    this.#set('searching');
    ui.bar.value = 0;
    ui.status.textContent = t.searching(0, undefined);
    emit(this.#el, 'started', { search: true });
    try {
      // The session's handle takes one search: prepare it afresh.
      await this.#session.prepare(cur.kernel, cur.snapshot);
      const r = await this.#session.search(cur.kernel, cur.snapshot, {
        signal: this.#abort.signal,
        onProgress: (p) => {
          ui.bar.value = p.searched / p.total;
          ui.status.textContent = t.searching((100 * p.searched) / p.total, p.eta);
        },
      });
      ui.status.textContent = r.search.complete ? t.searched(r.search.seconds, r.search.candidates) : t.stopped;
      await this.#showSnapshot(r.diagnosis, cur.snapshot);
      ui.searchBox.hidden = r.search.complete;
      emit(this.#el, 'completed', { verdict: r.diagnosis.verdict.kind, complete: r.search.complete });
    } catch (err) {
      this.#fail(err instanceof Error ? err.message : String(err));
    }
  }

  dispose(): void {
    this.#ac.abort();
    this.#abort?.abort();
    this.#session.dispose();
    this.#set('disposed');
    this.#ui.root.remove();
  }
}

async function mountServer(el: HTMLElement, options: ServerOptions): Promise<() => void> {
  const w = new ServerWidget(el, options);
  return () => w.dispose();
}

/** Registers `<reuseport-server>` once. */
export function defineServerElement(): void {
  defineIsland(
    'reuseport-server',
    islandElement(mountServer, (host) => ({ kernel: host.getAttribute('kernel') ?? '6.18' }), ['kernel']),
  );
}
