/**
 * The bind checker `<reuseport-bind kernel="6.18" layout='{"calls":[…]}'>`:
 * a call log (the agent's `predict --layout` format: the calls a program
 * makes on its sockets, in order), each call editable, movable and
 * removable; beside each call, the model's answer to it (`Host.answers()`):
 * ok, or the errno, the kernel rule and the socket it conflicts with. A
 * layout in the earlier `{sockets, …}` form is shown as the calls the model
 * converts it to (`Host.calls()`). Every answer is the model's; every
 * sentence is the catalogue's (`ui.bind.*` of messages/*.json).
 *
 * States (`data-state` on the element): `loading`, `ready` (each call has
 * the model's answer, or the alert says why the calls are not valid),
 * `disposed`.
 */
import { select, type Selection } from 'd3';
import { loadModel, profiles, resolveProfile } from '../model/index';
import {
  Host,
  fdOfCalls,
  lastCall,
  placeFor,
  loadLookup,
  setupCalls,
  socketCount,
  withoutSocket,
  type Call,
  type CallLog,
  type CallResult,
  type Layout,
  type SockOpt,
} from '../model/lookup';
import { langOf, sayRefusal, words, type Lang, type Refusal, type Words } from '../model/messages';
import { DEFAULT, MAX_CALLS, MAX_SOCKETS, NEW_SOCKET, readLog, type LogWords } from './bind-log';

export { MAX_CALLS, MAX_SOCKETS };
import { pageLang } from './site';
import { defineIsland, emit, hostOf, islandElement } from './element';

/** Options of the bind checker. */
export interface BindOptions {
  /** Kernel profile or release. @default "6.18" */
  kernel?: string;
  /** The calls (or a layout of the earlier form, which the model converts). @default two wildcard TCP listeners on 8080 with SO_REUSEPORT */
  layout?: CallLog | Layout;
}

/** The calls the "Add a call" menu offers. */
const ADDABLE = ['bind', 'listen', 'reuseport', 'reuseaddr', 'shutdown', 'close'] as const;
type Addable = (typeof ADDABLE)[number];

/** The kernel's name of a socket option. */
function optName(o: SockOpt): string {
  if ('reuseaddr' in o) return 'SO_REUSEADDR';
  if ('reuseport' in o) return 'SO_REUSEPORT';
  if ('v6only' in o) return 'IPV6_V6ONLY';
  if ('bindtodevice' in o) return 'SO_BINDTODEVICE';
  if ('incomingCpu' in o) return 'SO_INCOMING_CPU';
  if ('linger' in o) return 'SO_LINGER';
  return 'SO_ATTACH_REUSEPORT_CBPF';
}

/** An option's value as C writes it (`struct linger` as `{l_onoff, l_linger}`), for the options the checker does not edit. */
function optValue(o: SockOpt): string {
  if ('bindtodevice' in o) return JSON.stringify(o.bindtodevice);
  if ('incomingCpu' in o) return String(o.incomingCpu);
  if ('linger' in o) return o.linger === null ? '{0, 0}' : `{1, ${o.linger}}`;
  if ('attachReuseport' in o) return o.attachReuseport.kind;
  return '';
}

type Row = Selection<HTMLDivElement, unknown, null, undefined>;

/** Where the checker is (see the module documentation). */
export type BindState = 'loading' | 'ready' | 'disposed';

/** The sentences a layout that cannot be shown is refused with, in `lang`. */
function logWords(w: Words<'bind'>): LogWords {
  return {
    notCalls: w.say('not_calls'),
    tooManyCalls: (n) => w.say('too_many_calls', { n, max: MAX_CALLS }),
    tooManySockets: (n) => w.say('too_many_sockets', { n, max: MAX_SOCKETS }),
  };
}

/** English begins a sentence with a capital; Chinese has no case, and its rules may begin with a kernel name (ip_local_port_range). */
const sentence = (lang: Lang, s: string): string => (lang === 'en' ? `${s.charAt(0).toUpperCase()}${s.slice(1)}` : s);

/** The bind checker on a page; made by {@link BindChecker.mount}, removed by {@link BindChecker.dispose}. */
export class BindChecker {
  static #uid = 0;

  readonly #el: HTMLElement;
  readonly #lang: Lang;
  readonly #w: Words<'bind'>;
  readonly #id: string;
  readonly #log: CallLog;
  readonly #root: Selection<HTMLDivElement, unknown, null, undefined>;
  readonly #list: Selection<HTMLOListElement, unknown, null, undefined>;
  readonly #err: Selection<HTMLParagraphElement, unknown, null, undefined>;
  readonly #addSock: Selection<HTMLButtonElement, unknown, null, undefined>;
  readonly #kindSel: Selection<HTMLSelectElement, unknown, null, undefined>;
  readonly #fdSel: Selection<HTMLSelectElement, unknown, null, undefined>;
  readonly #addCall: Selection<HTMLButtonElement, unknown, null, undefined>;

  #state: BindState = 'loading';
  /** The profile the calls are answered under (its menu's value). */
  #kernel: string;
  /** Why the layout given was not shown (the default log is, instead), until the first edit. */
  #readError: string | undefined;

  /** Loads the model's packages and shows the checker under `el`, answered once. */
  static async mount(el: HTMLElement, options: BindOptions = {}): Promise<BindChecker> {
    await Promise.all([loadModel(), loadLookup()]);
    const c = new BindChecker(el, options);
    c.#draw();
    return c;
  }

  private constructor(el: HTMLElement, options: BindOptions) {
    this.#el = el;
    this.#lang = langOf(pageLang(el));
    const w = words(this.#lang, 'bind');
    this.#w = w;
    this.#id = `rl-bind-${BindChecker.#uid++}`;
    const id = this.#id;
    // The menu lists profiles: a release given (6.14, 6.18.44) is shown as the profile it resolves to.
    const given = resolveProfile(options.kernel ?? '6.18').release;
    this.#kernel = `${given.major}.${given.minor}`;
    const read = readLog(this.#kernel, options.layout ?? DEFAULT, logWords(w));
    this.#log = read.log;
    this.#readError = read.error;
    const root = select(el).append('div').attr('class', 'rl-bind');
    this.#root = root;
    const top = root.append('div').attr('class', 'rl-bind-top');
    top
      .append('label')
      .attr('for', `${id}-k`)
      .text(`${w.say('kernel')} `);
    const ksel = top.append('select').attr('id', `${id}-k`);
    ksel
      .selectAll('option')
      .data(profiles())
      .join('option')
      .attr('value', (p) => `${p.release.major}.${p.release.minor}`)
      .text((p) => `${p.release.major}.${p.release.minor}`);
    ksel.property('value', this.#kernel).on('change', () => {
      this.#kernel = String(ksel.property('value'));
      this.#answer();
    });
    root.append('p').attr('class', 'rl-bind-caption').attr('id', `${id}-cap`).text(w.say('caption'));
    this.#list = root.append('ol').attr('class', 'rl-bind-list').attr('start', 0).attr('aria-labelledby', `${id}-cap`);
    this.#err = root.append('p').attr('class', 'rl-errors').attr('role', 'alert');
    const tools = root.append('div').attr('class', 'rl-bind-tools');
    this.#addSock = tools.append('button').attr('type', 'button').text(w.say('add_socket'));
    this.#addSock.on('click', () => {
      const log = this.#log;
      const n = socketCount(log.calls);
      if (n >= MAX_SOCKETS || log.calls.length >= MAX_CALLS) return;
      log.calls.push(...setupCalls(n, NEW_SOCKET));
      this.#edited();
    });
    const adder = tools.append('span').attr('class', 'rl-bind-adder');
    this.#kindSel = adder.append('select').attr('aria-label', w.say('add_call'));
    this.#kindSel
      .selectAll('option')
      .data(ADDABLE)
      .join('option')
      .attr('value', (d) => d)
      .text((d) => (d === 'reuseport' || d === 'reuseaddr' ? `setsockopt(SO_${d.toUpperCase()})` : `${d}()`));
    adder.append('span').text(` ${w.say('on_socket')} `);
    this.#fdSel = adder.append('select').attr('aria-label', w.say('add_call_on'));
    this.#addCall = adder.append('button').attr('type', 'button').text(w.say('add_call'));
    this.#addCall.on('click', () => {
      const log = this.#log;
      const fd = Number(this.#fdSel.property('value'));
      if (!Number.isInteger(fd) || fd < 0 || log.calls.length >= MAX_CALLS) return;
      const call = this.#newCall(this.#kindSel.property('value') as Addable, fd);
      log.calls.splice(placeFor(log.calls, fd, call.call), 0, call);
      this.#edited();
    });
  }

  /** The state the checker is in. */
  get state(): BindState {
    return this.#state;
  }

  /** Removes the checker. */
  dispose(): void {
    this.#root.remove();
    this.#setState('disposed');
  }

  #setState(s: BindState): void {
    this.#state = s;
    hostOf(this.#el).dataset.state = s;
  }

  /** A call of `kind` on `fd`; a bind takes the address and port of the socket's last bind, else its family's wildcard on 8080. */
  #newCall(kind: Addable, fd: number): Call {
    const calls = this.#log.calls;
    if (kind === 'reuseport') return { call: 'setsockopt', fd, opt: { reuseport: true } };
    if (kind === 'reuseaddr') return { call: 'setsockopt', fd, opt: { reuseaddr: true } };
    if (kind !== 'bind') return { call: kind, fd };
    const last = calls[lastCall(calls, fd, 'bind')];
    if (last?.call === 'bind') return { ...last };
    const made = calls[lastCall(calls, fd, 'socket')];
    return { call: 'bind', fd, addr: made?.call === 'socket' && made.family === 'inet6' ? '::' : '0.0.0.0', port: 8080 };
  }

  /** After an edit of a call's field: the rows stay (and the focus with them); the answers are asked again. */
  #changed(): void {
    this.#readError = undefined;
    this.#answer();
  }

  /**
   * After calls were added, moved or removed: the rows are written again and
   * the answers asked again. `focus`: the row whose button takes the focus
   * back (the first of `glyphs` not disabled), since the one pressed is gone.
   */
  #edited(focus?: { call: number; glyphs: readonly string[] }): void {
    const calls = this.#log.calls;
    this.#readError = undefined;
    this.#draw();
    if (!focus || calls.length === 0) return;
    const at = Math.min(focus.call, calls.length - 1);
    const buttons = [...this.#list.node()!.querySelectorAll<HTMLButtonElement>(`li[data-call="${at}"] .rl-bind-buttons button`)];
    const glyph = focus.glyphs.find((g) => buttons.some((b) => b.textContent === g && !b.disabled));
    buttons.find((b) => b.textContent === glyph)?.focus();
  }

  #outcome(a: Refusal | null | undefined): { text: string; ok: boolean } {
    const w = this.#w;
    if (a === undefined) return { text: '', ok: false };
    if (a === null) return { text: w.say('ok'), ok: true };
    const conflict = a.with !== null ? w.say('refusal_with', { with: a.with }) : '';
    return { text: w.say('refusal', { errno: a.errno, with: conflict, rule: sentence(this.#lang, sayRefusal(this.#lang, a)) }), ok: false };
  }

  /** How a socket ends after all its calls: closed or not, receiving or not, its random port and its group. */
  #ends(r: CallResult): string {
    const w = this.#w;
    return w.say('ends', {
      state: w.say(r.closed ? 'ends_state.closed' : r.receiving ? 'ends_state.receiving' : 'ends_state.idle'),
      port: r.randomPort !== null ? w.say('ends_port', { low: r.randomPort.low, high: r.randomPort.high }) : '',
      group: r.group !== null ? w.say('ends_group', { group: r.group, member: String(r.member) }) : '',
    });
  }

  /** A select of `values` in `row`, labelled, calling `set` on change. */
  #choice(row: Row, label: string, values: readonly string[], value: string, set: (v: string) => void): void {
    const s = row.append('select').attr('aria-label', label);
    s.selectAll('option')
      .data(values)
      .join('option')
      .attr('value', (d) => d)
      .text((d) => d);
    s.property('value', value).on('change', () => {
      set(String(s.property('value')));
      this.#changed();
    });
  }

  /** A number or text input in `row`, labelled; `set` returns false for a value it refuses (the input goes back). */
  #field(row: Row, label: string, value: string, size: number, set: (v: string) => boolean): void {
    let kept = value;
    const i = row.append('input').attr('aria-label', label).attr('size', size).property('value', value);
    i.on('change', () => {
      const v = String(i.property('value')).trim();
      if (set(v)) {
        kept = v;
        this.#changed();
      } else i.property('value', kept);
    });
  }

  /** The call as C, its fields editable. */
  #callLine(row: Row, c: Call, fd: number): void {
    const w = this.#w;
    const text = (s: string) => row.append('span').attr('class', 'rl-mono').text(s);
    if (c.call === 'socket') {
      row.append('span').attr('class', 'rl-bind-name').text(w.say('socket', { fd }));
      text(`= socket(`);
      this.#choice(row, w.say('socket_field', { fd, field: w.say('family') }), ['AF_INET', 'AF_INET6'], c.family === 'inet6' ? 'AF_INET6' : 'AF_INET', (v) => {
        c.family = v === 'AF_INET6' ? 'inet6' : 'inet';
      });
      this.#choice(
        row,
        w.say('socket_field', { fd, field: w.say('proto') }),
        ['SOCK_STREAM', 'SOCK_DGRAM'],
        c.proto === 'udp' ? 'SOCK_DGRAM' : 'SOCK_STREAM',
        (v) => {
          c.proto = v === 'SOCK_DGRAM' ? 'udp' : 'tcp';
        },
      );
      text(')');
      const l = row.append('label').attr('class', 'rl-bind-field');
      l.append('span').text(w.say('uid'));
      // Named per socket, like the other fields of the call: every socket's UID input said only "UID".
      const uid = l
        .append('input')
        .attr('type', 'number')
        .attr('min', 0)
        .attr('aria-label', w.say('socket_field', { fd, field: w.say('uid') }))
        .style('width', 'calc(5 * var(--rl-rem))')
        .property('value', c.uid);
      uid.on('change', () => {
        const v = Number(uid.property('value'));
        if (Number.isInteger(v) && v >= 0 && v < 2 ** 32) {
          c.uid = v;
          this.#changed();
        } else uid.property('value', c.uid);
      });
      return;
    }
    if (c.call === 'setsockopt') {
      const o = c.opt;
      text(`setsockopt(${c.fd}, ${optName(o)}, `);
      if ('reuseaddr' in o || 'reuseport' in o || 'v6only' in o) {
        const key = 'reuseaddr' in o ? 'reuseaddr' : 'reuseport' in o ? 'reuseport' : 'v6only';
        const on = (o as Record<typeof key, boolean>)[key];
        const l = row.append('label').attr('class', 'rl-bind-check');
        const shown = l.append('span').attr('class', 'rl-mono');
        const changed = () => this.#changed();
        l.insert('input', 'span')
          .attr('type', 'checkbox')
          .attr('aria-label', w.say('opt_value', { opt: optName(o) }))
          .property('checked', on)
          .on('change', function () {
            const now = (this as HTMLInputElement).checked;
            c.opt = { [key]: now } as SockOpt;
            shown.text(now ? '1' : '0');
            changed();
          });
        shown.text(on ? '1' : '0');
      } else text(optValue(o));
      text(')');
      return;
    }
    if (c.call === 'bind' || c.call === 'connect') {
      text(`${c.call}(${c.fd}, `);
      this.#field(row, w.say('call_addr', { call: c.call }), c.addr, 16, (v) => {
        if (!v || v.length > 64) return false;
        c.addr = v;
        return true;
      });
      text(':');
      this.#field(row, w.say('call_port', { call: c.call }), String(c.port), 5, (v) => {
        const p = Number(v);
        if (!Number.isInteger(p) || p < 0 || p > 65535) return false;
        c.port = p;
        return true;
      });
      text(')');
      return;
    }
    text(`${c.call}(${c.fd})`);
  }

  #move(i: number, by: -1 | 1): void {
    const calls = this.#log.calls;
    const j = i + by;
    if (j < 0 || j >= calls.length) return;
    [calls[i], calls[j]] = [calls[j]!, calls[i]!];
    // The focus follows the call moved, on the same button while it can move further.
    this.#edited({ call: j, glyphs: by < 0 ? ['↑', '↓'] : ['↓', '↑'] });
  }

  /** The rows and the answers. */
  #draw(): void {
    this.#rows();
    this.#answer();
  }

  /** One row per call, its answer's paragraph empty until {@link BindChecker.#answer}. */
  #rows(): void {
    const w = this.#w;
    const log = this.#log;
    const sockets = socketCount(log.calls);
    this.#list.selectAll('li').remove();
    const fds = fdOfCalls(log.calls);
    log.calls.forEach((c, i) => {
      const fd = fds[i]!;
      const li = this.#list.append('li').attr('class', `rl-bind-call rl-bind-${c.call}`).attr('data-call', i).attr('data-fd', fd);
      const row = li.append('div').attr('class', 'rl-bind-row') as unknown as Row;
      row.append('span').attr('class', 'rl-bind-index').text(`${i}.`);
      this.#callLine(row, c, fd);
      const btns = row.append('span').attr('class', 'rl-bind-buttons');
      const btn = (label: string, glyph: string, disabled: boolean, act: () => void) =>
        btns.append('button').attr('type', 'button').attr('aria-label', label).attr('title', label).text(glyph).property('disabled', disabled).on('click', act);
      if (c.call !== 'socket') {
        btn(w.say('move_up', { i }), '↑', i === 0, () => this.#move(i, -1));
        btn(w.say('move_down', { i }), '↓', i === log.calls.length - 1, () => this.#move(i, 1));
        btn(w.say('remove_call', { i }), '×', false, () => {
          log.calls.splice(i, 1);
          this.#edited({ call: i, glyphs: ['×', '↑', '↓'] });
        });
      } else
        btn(w.say('remove_socket', { fd }), '×', sockets <= 1, () => {
          log.calls = withoutSocket(log.calls, fd);
          this.#edited({ call: i, glyphs: ['×', '↑', '↓'] });
        });
      li.append('p').attr('class', 'rl-bind-result');
    });
  }

  /** The model's answer to each call of the log as it is now, written under its row. */
  #answer(): void {
    const w = this.#w;
    const log = this.#log;
    const kernel = this.#kernel;
    let answers: (Refusal | null)[] = [];
    let results: CallResult[] = [];
    this.#err.text(this.#readError ? w.say('bad', { why: this.#readError }) : '');
    try {
      const host = new Host(kernel, log);
      try {
        answers = host.answers();
        results = host.results();
      } finally {
        host.dispose();
      }
    } catch (e) {
      this.#err.text(w.say('bad', { why: e instanceof Error ? e.message : String(e) }));
    }
    const sockets = socketCount(log.calls);
    this.#addSock.property('disabled', sockets >= MAX_SOCKETS || log.calls.length >= MAX_CALLS);
    this.#addCall.property('disabled', sockets === 0 || log.calls.length >= MAX_CALLS);
    const fdSel = this.#fdSel;
    const keep = fdSel.property('value');
    fdSel
      .selectAll('option')
      .data(Array.from({ length: sockets }, (_, i) => i))
      .join('option')
      .attr('value', (d) => d)
      .text((d) => String(d));
    if (keep !== '' && Number(keep) < sockets) fdSel.property('value', keep);
    emit(this.#el, 'answered', { kernel, answers: answers.map((a) => a?.errno ?? 'ok') });
    const fds = fdOfCalls(log.calls);
    const outcome = (a: Refusal | null | undefined) => this.#outcome(a);
    const ends = (r: CallResult) => this.#ends(r);
    this.#list.selectAll<HTMLLIElement, unknown>('li').each(function (_, i) {
      const c = log.calls[i]!;
      const o = outcome(answers[i]);
      const r = c.call === 'socket' ? results[fds[i]!] : undefined;
      select(this)
        .select('p.rl-bind-result')
        .attr('class', `rl-bind-result ${o.ok ? 'rl-bind-ok' : 'rl-bind-refused'}`)
        .text(r && o.ok ? `${o.text}${ends(r)}` : o.text);
    });
    this.#setState('ready');
  }
}

/** Mounts the checker into `el`; returns `dispose`. */
export async function mountBind(el: HTMLElement, options: BindOptions = {}): Promise<() => void> {
  const c = await BindChecker.mount(el, options);
  return () => c.dispose();
}

function readBind(el: HTMLElement): BindOptions {
  const raw = el.getAttribute('layout');
  let layout: CallLog | undefined;
  if (raw) {
    try {
      layout = JSON.parse(raw) as CallLog;
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      throw new Error(words(langOf(pageLang(el)), 'bind').say('not_json', { why }));
    }
  }
  return { kernel: el.getAttribute('kernel') ?? undefined, layout };
}

export const ReuseportBindElement = islandElement(mountBind, readBind, ['kernel', 'layout']);

export const ReuseportBindCheckElement = islandElement(mountBind, readBind, ['kernel', 'layout']);

/** Registers `<reuseport-bind>` and its course-page name `<reuseport-bind-check>` once. */
export function defineBindElement(): void {
  defineIsland('reuseport-bind', ReuseportBindElement);
  defineIsland('reuseport-bind-check', ReuseportBindCheckElement);
}
