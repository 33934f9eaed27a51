/**
 * The lookup widget: paste 4-tuples, describe the group and the kernel, and
 * see which socket the kernel picks and exactly why.
 *
 * `mountLookup(el, options)` returns `dispose`; `<reuseport-lookup>` is the
 * same widget as a custom element (attributes: kernel, proto, listeners,
 * tuples).
 *
 * Every answer is the model's (`Group.explainText`); the tables are drawn by
 * src/render/table.ts and the cards by src/render/explain-card.ts. This file
 * keeps the form and the runs.
 *
 * States (`data-state` on the element): `answering` (a run is under way,
 * yielding to the page between lines), `answered` (the run's answers are
 * shown, with the lines it could not answer), `invalid` (a field is wrong or
 * the group cannot be built: the errors name it, nothing is answered),
 * `disposed`.
 */
import { select, type Selection } from 'd3';
import { pageLang } from './site';
import {
  Group,
  loadModel,
  maxGroupMembers,
  maxListeners,
  parseBind,
  parseTuples,
  profiles,
  resolveNotes,
  resolveProfile,
  type LineAnswer,
  type Proto,
} from '../model/index';
import { say, sayBasis, sayLineError } from '../model/messages';
import { countByListener, explainView } from '../scene/explain-view';
import { PROTO_OPTIONS, selectOptions } from './dom';
import { renderTextTable } from '../render/table';
import { renderExplain } from '../render/explain-card';
import { hex32, parseHex32 } from '../hex';
import { defineIsland, emit, hostOf, islandElement, provideSettings } from './element';
import { lookupText, type LookupText } from './lookup-text';
import type { Lang } from '../model/messages';

/** Options of the lookup widget. */
export interface LookupOptions {
  /** Kernel profile or release. @default "6.18" */
  kernel?: string;
  /** @default "tcp" */
  proto?: Proto;
  /** Group size. @default 8 */
  listeners?: number;
  /** Initial tuple text. @default one loopback connection */
  tuples?: string;
  /** The per-boot IPv4 hash value, hex. @default a random value */
  secret?: string;
}

/**
 * At most this many lines are explained per run: this widget works on the
 * page's thread and draws every step, so it is for a few connections; the
 * paste analyser (`<reuseport-paste>`) takes a million in a worker.
 */
export const MAX_LINES = 200;
/** Detailed explanations rendered per run (the table lists every line). */
export const MAX_DETAILED = 50;
/** The longest stretch of answering before the page gets a turn (ms). */
const SLICE_MS = 40;

function randomHex32(): string {
  return hex32(crypto.getRandomValues(new Uint32Array(1))[0]!);
}

function parseNumList(s: string): number[] | undefined {
  const t = s.trim();
  if (t === '') return [];
  const parts = t.split(',').map((x) => x.trim());
  return parts.every((p) => /^\d+$/.test(p)) ? parts.map(Number) : undefined;
}

/** Where the widget is (see the module documentation). */
export type LookupState = 'answering' | 'answered' | 'invalid' | 'disposed';

type Div = Selection<HTMLDivElement, unknown, null, undefined>;

/** The lookup widget on a page; made by {@link LookupWidget.mount}, removed by {@link LookupWidget.dispose}. */
export class LookupWidget {
  static #uid = 0;

  readonly #el: HTMLElement;
  readonly #lang: Lang;
  readonly #t: LookupText;
  readonly #id: string;
  readonly #ac = new AbortController();

  readonly #root: Div;
  readonly #form: Selection<HTMLFormElement, unknown, null, undefined>;
  readonly #tuples: HTMLTextAreaElement;
  readonly #kernel: HTMLInputElement;
  readonly #profileNote: Selection<HTMLParagraphElement, unknown, null, undefined>;
  readonly #proto: HTMLSelectElement;
  readonly #listeners: HTMLInputElement;
  readonly #bind: HTMLInputElement;
  readonly #closed: HTMLInputElement;
  readonly #cpu: HTMLInputElement;
  readonly #secret: HTMLInputElement;
  readonly #inner: HTMLInputElement;
  readonly #status: Div;
  readonly #errors: Div;
  readonly #results: Div;

  #state: LookupState = 'answering';
  /** Where the secret came from: the page's attribute, the reader, or a random boot. */
  #secretOrigin: 'given' | 'random' = 'given';
  /** The newest run: an older one still answering stops when it sees a newer one began. */
  #generation = 0;

  /** Loads the model and shows the widget under `el`, answering once. */
  static async mount(el: HTMLElement, options: LookupOptions = {}): Promise<LookupWidget> {
    await loadModel();
    const w = new LookupWidget(el, options);
    void w.run();
    return w;
  }

  private constructor(el: HTMLElement, options: LookupOptions) {
    this.#el = el;
    this.#lang = pageLang(el);
    this.#t = lookupText(this.#lang);
    const t = this.#t;
    this.#id = `rl-lookup-${++LookupWidget.#uid}`;
    const f = (name: string) => `${this.#id}-${name}`;
    const on = { signal: this.#ac.signal };
    this.#root = select(el).append('div').attr('class', 'rl-lookup');
    this.#form = this.#root.append('form').attr('class', 'rl-form').attr('novalidate', '').attr('aria-describedby', f('help'));
    const form = this.#form;
    form.append('p').attr('id', f('help')).attr('class', 'rl-help').text(t.help);

    this.#tuples = this.#field('tuples', t.tuples)
      .append('textarea')
      .attr('id', f('tuples'))
      .attr('name', 'tuples')
      .attr('rows', 6)
      .attr('spellcheck', 'false')
      .attr('aria-describedby', f('help'))
      .property('value', options.tuples ?? '127.0.0.9 40000 127.0.0.1 8080')
      .node()!;

    this.#kernel = this.#field('kernel', t.kernel, t.kernelHint)
      .append('input')
      .attr('id', f('kernel'))
      .attr('name', 'kernel')
      .attr('list', f('profiles'))
      .attr('aria-describedby', f('kernel-hint'))
      .property('value', options.kernel ?? '6.18')
      .node()!;
    form
      .append('datalist')
      .attr('id', f('profiles'))
      .selectAll('option')
      .data(profiles())
      .join('option')
      .attr('value', (p) => `${p.release.major}.${p.release.minor}`);
    this.#profileNote = form.append('p').attr('class', 'rl-hint').attr('aria-live', 'polite');

    const proto = this.#field('proto', t.proto).append('select').attr('id', f('proto')).attr('name', 'proto');
    selectOptions(proto, PROTO_OPTIONS, options.proto ?? 'tcp');
    this.#proto = proto.node()!;

    this.#listeners = this.#field('listeners', t.listeners, t.listenersHint(maxGroupMembers(), maxListeners()))
      .append('input')
      .attr('id', f('listeners'))
      .attr('type', 'number')
      .attr('min', 1)
      .attr('max', 40000)
      .attr('aria-describedby', f('listeners-hint'))
      .property('value', String(options.listeners ?? 8))
      .node()!;
    this.#bind = this.#field('bind', t.bound, t.boundHint)
      .append('input')
      .attr('id', f('bind'))
      .attr('aria-describedby', f('bind-hint'))
      .attr('placeholder', t.boundPlaceholder)
      .node()!;
    this.#closed = this.#field('closed', t.closed, t.closedHint)
      .append('input')
      .attr('id', f('closed'))
      .attr('aria-describedby', f('closed-hint'))
      .attr('inputmode', 'numeric')
      .node()!;
    this.#cpu = this.#field('cpu', t.cpu).append('input').attr('id', f('cpu')).attr('type', 'number').attr('min', 0).property('value', '0').node()!;

    const secretWrap = this.#field('secret', t.secret, t.secretHint);
    this.#secret = secretWrap
      .append('input')
      .attr('id', f('secret'))
      .attr('aria-describedby', f('secret-hint'))
      .attr('spellcheck', 'false')
      .property('value', options.secret ?? '')
      .node()!;
    // "Embed this" writes the form as it is now, not as the page first set it.
    provideSettings(el, () => {
      const out: Record<string, string> = {
        kernel: this.#kernel.value.trim(),
        proto: this.#proto.value.trim(),
        listeners: this.#listeners.value.trim(),
        tuples: this.#tuples.value,
      };
      if (this.#secret.value.trim()) out.secret = this.#secret.value.trim();
      return out;
    });
    const newBoot = secretWrap.append('button').attr('type', 'button').text(t.newBoot).node()!;
    this.#inner = this.#field('inner', t.inner, t.innerHint)
      .append('input')
      .attr('id', f('inner'))
      .attr('aria-describedby', f('inner-hint'))
      .attr('spellcheck', 'false')
      .property('value', '')
      .node()!;

    form.append('button').attr('type', 'submit').attr('class', 'rl-primary').text(t.explain);
    this.#status = this.#root.append('div').attr('class', 'rl-status').attr('role', 'status').attr('aria-live', 'polite');
    this.#errors = this.#root.append('div').attr('class', 'rl-errors');
    this.#results = this.#root.append('div').attr('class', 'rl-results');

    form.node()!.addEventListener(
      'submit',
      (ev) => {
        ev.preventDefault();
        void this.run();
      },
      on,
    );
    newBoot.addEventListener('click', () => this.newBoot(), on);
    // A secret typed by the reader is theirs, no longer a random boot's.
    this.#secret.addEventListener(
      'input',
      () => {
        this.#secretOrigin = 'given';
      },
      on,
    );
    this.#kernel.addEventListener('input', () => this.#showProfile(), on);
    this.#showProfile();
  }

  /** The state the widget is in. */
  get state(): LookupState {
    return this.#state;
  }

  #setState(s: LookupState): void {
    this.#state = s;
    hostOf(this.#el).dataset.state = s;
  }

  /** A labelled field of the form, with its hint when given. */
  #field(name: string, label: string, hint?: string): Div {
    const f = (n: string) => `${this.#id}-${n}`;
    const wrap = this.#form.append('div').attr('class', 'rl-field');
    wrap.append('label').attr('for', f(name)).text(label);
    if (hint)
      wrap
        .append('span')
        .attr('class', 'rl-hint')
        .attr('id', f(`${name}-hint`))
        .text(hint);
    return wrap;
  }

  /** The kernel profile the field names, with its notes, or why it names none. */
  #showProfile(): void {
    const lang = this.#lang;
    try {
      const k = this.#kernel.value.trim();
      const p = resolveProfile(k);
      const notes = resolveNotes(k).map((n) => `${say(lang, 'note', n)}${lang === 'zh-CN' ? '。' : '.'}`);
      this.#profileNote.text([this.#t.profile(`${p.release.major}.${p.release.minor}`, sayBasis(lang, p.basis)), ...notes].join(' '));
    } catch (e) {
      this.#profileNote.text((e as Error).message);
    }
  }

  /** A new random boot: new secrets (the inner one too, unless the reader gave it), then a run. */
  newBoot(): void {
    this.#secret.value = randomHex32();
    if (this.#inner.value.trim() === '' || this.#secretOrigin === 'random') this.#inner.value = randomHex32();
    this.#secretOrigin = 'random';
    void this.run();
  }

  /** Checks the form, asks the model for every line, and shows the answers. */
  async run(): Promise<void> {
    if (this.#state === 'disposed') return;
    const mine = ++this.#generation;
    const t = this.#t;
    const lang = this.#lang;
    const errors = this.#errors;
    const results = this.#results;
    const status = this.#status;
    this.#setState('answering');
    errors.selectAll('*').remove();
    results.selectAll('*').remove();
    // A new run replaces the last one's status, so it never stands beside new errors.
    status.text('');
    const problems: string[] = [];
    const fail = (msg: string) => problems.push(msg);

    const text = this.#tuples.value;
    const lineCount = text.split('\n').length;
    if (lineCount > MAX_LINES) fail(t.tooManyLines(lineCount, MAX_LINES));
    const n = Number(this.#listeners.value);
    if (!Number.isInteger(n) || n < 1) fail(t.listenersBad);
    const secretText = this.#secret.value.trim();
    const s = parseHex32(secretText);
    if (secretText === '') fail(t.secretMissing);
    else if (s === undefined) fail(t.secretBad);
    const innerText = this.#inner.value.trim();
    const i6 = innerText === '' ? null : parseHex32(innerText);
    if (i6 === undefined) fail(t.innerBad);
    const closedList = parseNumList(this.#closed.value);
    if (closedList === undefined) fail(t.closedBad);
    const c = Number(this.#cpu.value);
    if (!Number.isInteger(c) || c < 0) fail(t.cpuBad);

    const parsed = parseTuples(text);
    // IPv6 answers need the inner key too; it is never assumed.
    if (i6 === null && parsed.some((p) => p.tuple?.daddr.includes(':'))) fail(t.innerMissing);
    const first = parsed.find((p) => p.tuple);
    let bindAddr = '';
    let port: number | undefined;
    const bindText = this.#bind.value.trim();
    if (bindText) {
      try {
        const b = parseBind(bindText);
        bindAddr = b.addr;
        port = b.port ?? undefined;
      } catch (e) {
        fail(t.boundBad((e as Error).message));
      }
    }
    if (!bindAddr) bindAddr = first?.tuple?.daddr ?? '';
    port ??= first?.tuple?.dport;
    if ((!bindAddr || port === undefined) && !problems.some((p) => p.startsWith(t.boundPrefix))) fail(t.noTuple);

    if (problems.length) {
      errors
        .append('ul')
        .attr('role', 'alert')
        .selectAll('li')
        .data(problems)
        .join('li')
        .text((d) => d);
      for (const p of parsed) if (p.error) errors.append('p').text(t.lineError(p.line, sayLineError(lang, p.error)));
      this.#setState('invalid');
      return;
    }

    const kernel = this.#kernel.value.trim();
    let group: Group;
    try {
      group = new Group(kernel, {
        proto: this.#proto.value as Proto,
        listeners: n,
        bind: bindAddr,
        port: port!,
        keys: { v4: s!, v6Outer: s!, v6Inner: i6 ?? 0 },
        closed: closedList!,
      });
    } catch (e) {
      errors
        .append('p')
        .attr('role', 'alert')
        .text(t.cannotBuild((e as Error).message));
      this.#setState('invalid');
      return;
    }
    // Line by line, yielding to the page every SLICE_MS: a 3.9–4.5 chain of a
    // million listeners takes tens of milliseconds a line, and 200 lines at
    // once froze the tab for seconds.
    const answers: LineAnswer[] = [];
    try {
      const lines = text.split('\n');
      let sliceStart = performance.now();
      for (let i = 0; i < lines.length; i++) {
        for (const a of group.explainText(lines[i]!, c)) answers.push({ ...a, line: i + 1 });
        if (performance.now() - sliceStart > SLICE_MS && i + 1 < lines.length) {
          status.text(t.working(i + 1, lines.length));
          await new Promise((r) => setTimeout(r, 0));
          if (mine !== this.#generation) return;
          sliceStart = performance.now();
        }
      }
    } finally {
      group.dispose();
    }
    const bad = answers.filter((a) => a.explain === undefined);
    if (bad.length) {
      const box = errors.append('div').attr('role', 'alert');
      box.append('p').text(t.notAnswered(bad.length));
      box
        .append('ul')
        .selectAll('li')
        .data(bad.slice(0, 100))
        .join('li')
        .text((a) => t.lineError(a.line, a.error ? sayLineError(lang, a.error) : (a.refused ?? '')));
    }
    const good = answers.filter((a): a is Extract<LineAnswer, { explain: object }> => a.explain !== undefined);
    emit(this.#el, 'answered', {
      kernel,
      answered: good.length,
      refused: bad.length,
      listeners: good.map((a) => a.explain.listener),
    });
    status.text(`${t.explained(good.length, bad.length)} ${this.#secretOrigin === 'random' ? t.underRandom(hex32(s!)) : t.underGiven(hex32(s!))}`);
    if (good.length) this.#showAnswers(good);
    this.#setState('answered');
  }

  /** The answered lines: counts per listener, the chosen socket of each line, and a card per line (drawn when opened). */
  #showAnswers(good: Extract<LineAnswer, { explain: object }>[]): void {
    const t = this.#t;
    const lang = this.#lang;
    const results = this.#results;
    results.append('h2').text(t.results);
    const counts = countByListener(good.map((a) => a.explain.listener));
    renderTextTable(results, {
      caption: t.perListener,
      head: t.perListenerHead,
      rows: counts.map((d) => [d.listener === null ? t.none : String(d.listener), String(d.count)]),
    });
    renderTextTable(results, {
      caption: t.chosen,
      head: t.chosenHead,
      rows: good.slice(0, 1000).map((a) => {
        const tu = a.explain.tuple;
        return [
          String(a.line),
          `${tu.saddr} ${tu.sport} → ${tu.daddr} ${tu.dport}`,
          a.explain.listener === null ? t.none : String(a.explain.listener),
          a.explain.slot === null ? '—' : String(a.explain.slot),
          a.explain.hash.hashHex,
        ];
      }),
      className: 'rl-table rl-answers',
    });
    if (good.length > 1000) results.append('p').text(t.firstRows(good.length));

    // A card is drawn when its details first opens: fifty closed cards of a
    // long chain's scan would be tens of thousands of rows nobody asked for.
    for (const a of good.slice(0, MAX_DETAILED)) {
      const det = results.append('details').attr('class', 'rl-explain');
      det.append('summary').text(t.detail(a.line, a.explain.listener === null ? t.none : String(a.explain.listener)));
      const body = det.append('div').node()!;
      const draw = () => {
        if (!body.hasChildNodes()) renderExplain(body, explainView(a.explain, lang), 3, t.card);
      };
      det.on('toggle', draw);
      if (good.length === 1) {
        draw();
        det.property('open', true);
      }
    }
    if (good.length > MAX_DETAILED) results.append('p').text(t.detailedFirst(MAX_DETAILED));
  }

  dispose(): void {
    this.#generation++;
    this.#ac.abort();
    this.#setState('disposed');
    this.#root.remove();
  }
}

/** Mounts the widget into `el`; returns a function that removes it and its listeners. */
export async function mountLookup(el: HTMLElement, options: LookupOptions = {}): Promise<() => void> {
  const w = await LookupWidget.mount(el, options);
  return () => w.dispose();
}

/** `<reuseport-lookup kernel="6.18" proto="tcp" listeners="8" tuples="..." secret="0x...">`. */
export const ReuseportLookupElement = islandElement(
  mountLookup,
  (el): LookupOptions => ({
    kernel: el.getAttribute('kernel') ?? undefined,
    proto: (el.getAttribute('proto') as Proto | null) ?? undefined,
    listeners: el.hasAttribute('listeners') ? Number(el.getAttribute('listeners')) : undefined,
    tuples: el.getAttribute('tuples') ?? undefined,
    secret: el.getAttribute('secret') ?? undefined,
  }),
  ['kernel', 'proto', 'listeners', 'tuples', 'secret', 'lang'],
);

/** Registers `<reuseport-lookup>` once. */
export function defineLookupElement(): void {
  defineIsland('reuseport-lookup', ReuseportLookupElement);
}
