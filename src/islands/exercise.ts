/**
 * Exercises with instant feedback, for a course page or a trainer:
 * `<reuseport-exercise kind="syn|bind" kernel="6.18" seed="1" count="5">`.
 *
 * - `kind="syn"`: a reuseport group, its hash key and a SYN's 4-tuple;
 *   which listener does the SYN reach? The model's `Group.explain` answers,
 *   and its explanation is shown after the learner's choice.
 * - `kind="bind"`: a few sockets already bound, and a new `bind()`; does it
 *   succeed, or which errno does it get? The model's `Host` answers, with
 *   the rule and the socket it conflicts with.
 *
 * Only the questions' inputs are random (a seeded stream, so a seed gives
 * the same questions on every page load); every answer is the model's, and
 * this file only compares it with the learner's choice.
 *
 * Events (bubbling, composed; see `emit`): `reuseport:started`
 * `{kind, kernel, seed, count}` when a run's first question shows (again
 * after "Try again" or "New questions"); `reuseport:answered`
 * `{kind, question, choice, correct, expected, hinted}` per answer
 * (`question` counts from 0; a syn choice is a listener number, a bind
 * choice `"success"` or an errno); `reuseport:completed`
 * `{kind, seed, score, total}` when the last question is answered.
 *
 * - `kind="model"`: a curated workload simulated under one accept model
 *   (src/islands/exercise-model.ts); which one made the histogram? A choice
 *   is a variant id such as `"epoll-exclusive"`.
 */
import { ephemeralRange, Group, NO_LISTENER, loadModel, resolveProfile, type Explain, type Tuple } from '../model/index';
import { Host, callLog, lastCall, loadLookup, setupAll, type CallLog, type SocketSetup } from '../model/lookup';
import { sayRefusal, sayUi, type Errno, type Lang, type Refusal } from '../model/messages';
import { renderExplain } from '../render/explain-card';
import { tableElement } from '../render/table';
import { explainView } from '../scene/explain-view';
import { Rng, mix32 } from '../scene/dispatch/rng';
import { hex32 } from '../hex';
import { defineIsland, emit, hostOf, islandElement } from './element';
import { exerciseText, type ExerciseText } from './exercise-text';
import { h } from './dom';
import { pageLang } from './site';
import { describeModel, modelQuestion, revealModel, runModelQuestion, type ModelQuestion } from './exercise-model';
import { scenarioText, variantTitle, type ScenarioText } from './scenario-text';
import { SimSession, type CuratedView } from '../model/sim';

/** What an exercise asks about. */
export type ExerciseKind = 'syn' | 'bind' | 'model';

const KINDS: readonly ExerciseKind[] = ['syn', 'bind', 'model'];

/** Options of the exercise widget. */
export interface ExerciseOptions {
  /** Which exercise. @default "syn" */
  kind?: ExerciseKind;
  /** Kernel profile or release the model follows. @default "6.18" */
  kernel?: string;
  /** Seed of the questions' inputs: a seed gives the same questions everywhere. @default 1 */
  seed?: number;
  /** How many questions, 1 to {@link MAX_COUNT}. @default 5 */
  count?: number;
}

/** At most this many questions per run. */
export const MAX_COUNT = 20;

/** One "which socket will this SYN reach?" question; every field after `tuple` is the model's. */
export interface SynQuestion {
  kind: 'syn';
  kernel: string;
  /** Listeners that joined the group, numbered 0.. in listen() order. */
  listeners: number;
  /** Address the group is bound to. */
  bind: string;
  port: number;
  /** The IPv4 hash key (secret + net_hash_mix). */
  secret: number;
  /** Listeners closed before the SYN, in this order. */
  closed: number[];
  /** The SYN: client first. */
  tuple: Tuple;
  /** The model's whole path for the SYN. */
  explain: Explain;
  /** The listener the model says receives it. */
  expected: number;
  /** The listening members (the model's), ascending: the choices. */
  choices: number[];
  /** The model's `socks[]`: [slot, listener] of each filled slot (empty before groups). */
  slots: [number, number][];
  /** The model's listener chain, newest first (when the kernel has no group). */
  chain: number[];
}

/** A bind() outcome: success or the errno. */
export type BindOutcome = 'success' | Errno;

/** One "which answer will this bind() get?" question. */
export interface BindQuestion {
  kind: 'bind';
  kernel: string;
  /** The sockets as the program sets them up, in order (socket i is fd i); the last is the new one, which only binds. */
  sockets: SocketSetup[];
  /** The calls that set them up: the log the model replays. */
  log: CallLog;
  /** The index in `log.calls` of the new socket's bind(): the call asked about. */
  bindCall: number;
  /** The model's answer to that call. */
  expected: BindOutcome;
  /** The model's refusal (rule, source, conflicting socket), null on success. */
  refusal: Refusal | null;
  choices: BindOutcome[];
}

export type Question = SynQuestion | BindQuestion | ModelQuestion;

/** The outcomes every bind question offers; one the model gives outside them is added. */
const BIND_CHOICES: BindOutcome[] = ['success', 'EADDRINUSE', 'EINVAL'];

/** The stream of inputs for question `index` of `seed` (each question its own, so `count` does not change them). */
function questionRng(seed: number, index: number, salt: number): Rng {
  return new Rng(mix32(seed >>> 0, (salt + index) >>> 0));
}

function pickOf<T>(rng: Rng, xs: readonly T[]): T {
  return xs[rng.below(xs.length)]!;
}

/**
 * Question `index` of the SYN exercise for `seed`: the group and the SYN are
 * drawn at random, the answer and its explanation are the model's.
 * Needs the core model loaded. Throws the model's error for an unknown kernel.
 */
export function synQuestion(seed: number, index: number, kernel = '6.18'): SynQuestion {
  const rng = questionRng(seed, index, 0x5e1);
  const listeners = 2 + rng.below(7);
  const server = pickOf(rng, ['10.0.0.1', '192.168.1.10', '127.0.0.1']);
  const bind = rng.below(2) === 0 ? '0.0.0.0' : server;
  const port = pickOf(rng, [80, 443, 8080, 8443]);
  const secret = rng.u32();
  const closed = listeners >= 3 && rng.below(3) === 0 ? [rng.below(listeners)] : [];
  const client =
    server === '127.0.0.1' ? `127.0.${rng.below(256)}.${1 + rng.below(254)}` : `${pickOf(rng, ['192.0.2', '198.51.100', '203.0.113'])}.${1 + rng.below(254)}`;
  const ports = ephemeralRange(kernel);
  const tuple: Tuple = { saddr: client, sport: ports.low + rng.below(ports.high - ports.low + 1), daddr: server, dport: port };
  const group = new Group(kernel, { proto: 'tcp', listeners, bind, port, keys: { v4: secret, v6Outer: secret, v6Inner: 0 }, closed });
  try {
    const explain = group.explain(tuple);
    if (explain.listener === null) throw new Error(`the model gives no listener for ${tuple.saddr}:${tuple.sport}`);
    const slots: [number, number][] = [];
    if (explain.group.selection === 'group')
      group.socks().forEach((l, s) => {
        if (l !== NO_LISTENER) slots.push([s, l]);
      });
    const listening = [...group.listening()];
    return {
      kind: 'syn',
      kernel,
      listeners,
      bind,
      port,
      secret,
      closed,
      tuple,
      explain,
      expected: explain.listener,
      choices: [...listening].sort((a, b) => a - b),
      slots,
      chain: explain.group.selection === 'group' ? [] : listening,
    };
  } finally {
    group.dispose();
  }
}

/** One socket with random options; `fresh` for the new socket, which only binds and may try a v4-mapped address. */
function drawSocket(rng: Rng, proto: 'tcp' | 'udp', fresh: boolean): SocketSetup {
  const port = rng.below(10) === 0 ? 8081 : 8080;
  const roll = rng.below(100);
  let family: 'inet' | 'inet6' = 'inet';
  let addr = pickOf(rng, ['0.0.0.0', '0.0.0.0', '127.0.0.1', '10.0.0.1']);
  let v6only = false;
  if (fresh && roll < 14) {
    family = 'inet6';
    addr = pickOf(rng, ['::ffff:127.0.0.1', '::ffff:10.0.0.1']);
    v6only = rng.below(3) !== 0;
  } else if (roll < 25) {
    family = 'inet6';
    addr = pickOf(rng, ['::', '::', '::1']);
    v6only = rng.below(2) === 0;
  }
  const afterBind = fresh || proto === 'udp' ? 'bound' : pickOf(rng, ['listen', 'listen', 'listen', 'bound', 'time_wait'] as const);
  return { family, proto, addr, port, v6only, reuseaddr: rng.below(2) === 0, reuseport: rng.below(2) === 0, uid: rng.below(7) === 0 ? 1000 : 0, afterBind };
}

/** The model's answer to each call of `log` (null for ok), or undefined when it refuses the log itself. */
function answersOf(kernel: string, log: CallLog): ReturnType<Host['answers']> | undefined {
  let host: Host;
  try {
    host = new Host(kernel, log);
  } catch {
    return undefined;
  }
  try {
    return host.answers();
  } finally {
    host.dispose();
  }
}

/**
 * Question `index` of the bind exercise for `seed`: sockets drawn at random
 * until the model accepts every earlier socket's calls and answers the new
 * bind() with the outcome drawn for this question (so the answers are
 * spread over success, EADDRINUSE and EINVAL); the answer is the model's.
 * Needs the lookup package loaded.
 */
export function bindQuestion(seed: number, index: number, kernel = '6.18'): BindQuestion {
  resolveProfile(kernel);
  const rng = questionRng(seed, index, 0xb1d);
  const wanted = pickOf(rng, ['success', 'success', 'success', 'EADDRINUSE', 'EADDRINUSE', 'EADDRINUSE', 'EINVAL'] as const);
  let best: { sockets: SocketSetup[]; log: CallLog; bindCall: number; answer: Refusal | null } | undefined;
  for (let attempt = 0; attempt < 400; attempt++) {
    const proto = rng.below(5) === 0 ? 'udp' : 'tcp';
    const earlier = Array.from({ length: 1 + rng.below(3) }, () => drawSocket(rng, proto, false));
    const sockets = [...earlier, drawSocket(rng, proto, true)];
    const log = callLog(setupAll(sockets));
    const answers = answersOf(kernel, log);
    if (!answers) continue;
    const bindCall = lastCall(log.calls, sockets.length - 1, 'bind');
    // Every call before the new bind() succeeded: only that bind() is in question.
    if (answers.slice(0, bindCall).some((a) => a !== null)) continue;
    const answer = answers[bindCall] ?? null;
    best ??= { sockets, log, bindCall, answer };
    if ((answer?.errno ?? 'success') === wanted) {
      best = { sockets, log, bindCall, answer };
      break;
    }
  }
  if (!best) throw new Error(`no bind question could be drawn for kernel ${kernel}`);
  const expected: BindOutcome = best.answer?.errno ?? 'success';
  return {
    kind: 'bind',
    kernel,
    sockets: best.sockets,
    log: best.log,
    bindCall: best.bindCall,
    expected,
    refusal: best.answer,
    choices: BIND_CHOICES.includes(expected) ? BIND_CHOICES : [...BIND_CHOICES, expected],
  };
}

/** The questions of one run; `model` questions need the model's curated scenarios. */
export function questions(kind: ExerciseKind, seed: number, count: number, kernel = '6.18', curated: readonly CuratedView[] = []): Question[] {
  const one = (i: number): Question =>
    kind === 'syn' ? synQuestion(seed, i, kernel) : kind === 'bind' ? bindQuestion(seed, i, kernel) : modelQuestion(curated, seed, i, kernel);
  return Array.from({ length: count }, (_, i) => one(i));
}

/** An element with a class, attributes and text. */

function endpoint(addr: string, port: number): string {
  return addr.includes(':') ? `[${addr}]:${port}` : `${addr}:${port}`;
}

/** A labelled value in a question's description. */
function fact(parent: HTMLElement, label: string, value: string, hint?: string): void {
  const row = parent.appendChild(h('div', 'rl-ex-fact'));
  row.append(h('dt', '', label));
  const dd = row.appendChild(h('dd', 'rl-mono', value));
  if (hint) dd.append(' ', h('span', 'rl-hint', hint));
}

/** Where a run of questions is: a model question being simulated, a question asked, answered, or the summary after the last. */
type Phase = 'simulating' | 'asking' | 'answered' | 'summary' | 'disposed';

/** The options, checked: every problem names the attribute. */
function checkOptions(options: ExerciseOptions, lang: Lang): { kind: ExerciseKind; kernel: string; count: number; seed: number } {
  const kind = options.kind ?? 'syn';
  if (!KINDS.includes(kind)) throw new Error(sayUi(lang, 'exercise.option_kind', { value: String(kind) }));
  const kernel = options.kernel ?? '6.18';
  const count = options.count ?? 5;
  if (!Number.isInteger(count) || count < 1 || count > MAX_COUNT)
    throw new Error(sayUi(lang, 'exercise.option_count', { max: MAX_COUNT, value: String(options.count) }));
  const seed = options.seed ?? 1;
  if (!Number.isInteger(seed) || seed < 0) throw new Error(sayUi(lang, 'exercise.option_seed', { value: String(options.seed) }));
  return { kind, kernel, count, seed };
}

/**
 * One exercise on a page: a run of questions, each asked, answered and
 * explained, then a summary that starts a new run. Made by
 * {@link ExerciseWidget.mount}; {@link ExerciseWidget.dispose} removes it.
 */
export class ExerciseWidget {
  static #uid = 0;

  readonly #el: HTMLElement;
  readonly #kind: ExerciseKind;
  readonly #kernel: string;
  readonly #count: number;
  readonly #lang: Lang;
  readonly #t: ExerciseText;
  readonly #st: ScenarioText;
  /** The simulation worker of the accept-model questions; the others need none. */
  readonly #sim: SimSession | undefined;
  readonly #curated: CuratedView[];
  readonly #id: string;

  readonly #root: HTMLElement;
  readonly #progress: HTMLElement;
  readonly #scoreEl: HTMLElement;
  readonly #body: HTMLElement;
  /** One live region for the whole life of the widget, so each verdict is announced. */
  readonly #live: HTMLElement;
  readonly #after: HTMLElement;

  #phase: Phase = 'asking';
  #seed = 0;
  #qs: Question[] = [];
  #at = 0;
  #score = 0;
  #answers: { choice: string; correct: boolean }[] = [];
  /** Counts the shows, so a simulation that ends after the learner moved on is dropped. */
  #shown = 0;
  #resize: ResizeObserver | undefined;

  /** Checks the options, loads what the kind needs, and shows the first question under `el`. */
  static async mount(el: HTMLElement, options: ExerciseOptions = {}): Promise<ExerciseWidget> {
    const o = checkOptions(options, pageLang(el));
    await (o.kind === 'bind' ? Promise.all([loadModel(), loadLookup()]) : loadModel());
    resolveProfile(o.kernel);
    // The accept-model questions run in the simulation worker; the others need no worker.
    const sim = o.kind === 'model' ? new SimSession() : undefined;
    let curated: CuratedView[] = [];
    try {
      if (sim) curated = await sim.curated();
    } catch (e) {
      sim?.dispose();
      throw e;
    }
    const w = new ExerciseWidget(el, o, sim, curated);
    w.#start(o.seed);
    hostOf(el).dataset.state = 'ready';
    return w;
  }

  private constructor(el: HTMLElement, o: ReturnType<typeof checkOptions>, sim: SimSession | undefined, curated: CuratedView[]) {
    this.#el = el;
    this.#kind = o.kind;
    this.#kernel = o.kernel;
    this.#count = o.count;
    this.#lang = pageLang(el);
    this.#t = exerciseText(this.#lang);
    this.#st = scenarioText(this.#lang);
    this.#sim = sim;
    this.#curated = curated;
    this.#id = `rl-ex-${++ExerciseWidget.#uid}`;
    const t = this.#t;
    this.#root = el.appendChild(h('section', `rl-ex rl-ex-${o.kind}`, undefined, { 'aria-labelledby': `${this.#id}-title` }));
    this.#root.append(h('p', 'rl-ex-title', t.title[o.kind], { id: `${this.#id}-title` }));
    const bar = this.#root.appendChild(h('p', 'rl-ex-bar'));
    this.#progress = bar.appendChild(h('span', 'rl-ex-progress'));
    this.#scoreEl = bar.appendChild(h('span', 'rl-ex-score'));
    this.#body = this.#root.appendChild(h('div', 'rl-ex-body'));
    this.#live = this.#root.appendChild(h('div', 'rl-ex-feedback', undefined, { role: 'status', 'aria-live': 'polite' }));
    this.#after = this.#root.appendChild(h('div', 'rl-ex-after'));
  }

  /** Removes the widget; a simulation still running is stopped and its answer dropped. */
  dispose(): void {
    this.#phase = 'disposed';
    this.#shown++;
    this.#resize?.disconnect();
    this.#sim?.dispose();
    this.#root.remove();
  }

  #choiceLabel(q: Question, c: number | string): string {
    if (q.kind === 'syn') return this.#t.listener(c as number);
    if (q.kind === 'bind') return this.#t.outcome[c as BindOutcome];
    const v = q.choices.find((x) => x.id === c);
    return v ? variantTitle(v, this.#st) : String(c);
  }

  #choicesOf(q: Question): (number | string)[] {
    return q.kind === 'model' ? q.choices.map((v) => v.id) : q.choices;
  }

  /** A new run of questions from `seed`. */
  #start(seed: number): void {
    this.#seed = seed;
    this.#qs = questions(this.#kind, seed, this.#count, this.#kernel, this.#curated);
    this.#at = 0;
    this.#score = 0;
    this.#answers = [];
    this.#show(false);
    emit(this.#el, 'started', { kind: this.#kind, kernel: this.#kernel, seed, count: this.#count });
  }

  #bars(): void {
    this.#progress.textContent = this.#t.progress(this.#at + 1, this.#qs.length);
    this.#scoreEl.textContent = this.#t.score(this.#score, this.#answers.length);
  }

  /** A box that scrolls sideways is a focusable, named region only while it does scroll (one tab stop fewer otherwise). */
  #scrollable(wrap: HTMLElement, name: string): void {
    const set = () => {
      if (wrap.scrollWidth > wrap.clientWidth) {
        wrap.setAttribute('role', 'region');
        wrap.setAttribute('aria-label', name);
        wrap.tabIndex = 0;
      } else for (const a of ['role', 'aria-label', 'tabindex']) wrap.removeAttribute(a);
    };
    this.#resize?.disconnect();
    this.#resize = 'ResizeObserver' in window ? new ResizeObserver(set) : undefined;
    this.#resize?.observe(wrap);
    set();
  }

  #describeSyn(q: SynQuestion, box: HTMLElement): void {
    const t = this.#t;
    box.append(h('p', 'rl-ex-lead', t.group('TCP', q.listeners, endpoint(q.bind, q.port), `${q.explain.profile.major}.${q.explain.profile.minor}`)));
    const dl = box.appendChild(h('dl', 'rl-ex-facts'));
    fact(dl, t.hashKey, hex32(q.secret), t.hashKeyHint);
    fact(dl, t.syn, `${endpoint(q.tuple.saddr, q.tuple.sport)} → ${endpoint(q.tuple.daddr, q.tuple.dport)}`);
    if (q.closed.length) box.append(h('p', 'rl-ex-note', t.closed(q.closed.map((c) => t.listener(c)).join(', '))));
    if (q.slots.length) {
      const wrap = box.appendChild(h('div', 'rl-ex-scroll'));
      wrap.append(
        tableElement({
          caption: t.slots,
          className: 'rl-table rl-ex-slots',
          rowHeads: true,
          rows: [
            [t.slotHead[0], ...q.slots.map(([s]) => String(s))],
            [t.slotHead[1], ...q.slots.map(([, l]) => String(l))],
          ],
        }),
      );
      this.#scrollable(wrap, t.slots);
    } else if (q.chain.length) {
      box.append(h('p', 'rl-ex-note', `${t.chain} (${t.chainHint}): ${q.chain.join(', ')}`));
    }
  }

  #sockLine(s: SocketSetup, name: string): HTMLElement {
    const t = this.#t;
    const li = h('li', 'rl-ex-sock');
    li.append(h('span', 'rl-ex-sock-name', name));
    const chips = li.appendChild(h('span', 'rl-ex-chips'));
    const chip = (text: string, cls = '') => chips.append(h('span', `rl-ex-chip ${cls}`.trim(), text));
    chip(`${s.proto.toUpperCase()} ${endpoint(s.addr, s.port)}`, 'rl-mono');
    if (s.family === 'inet6') chip(`IPv6${s.v6only ? ', IPV6_V6ONLY' : ''}`);
    chip(`SO_REUSEADDR ${s.reuseaddr ? t.on : t.off}`, s.reuseaddr ? 'rl-ex-on' : 'rl-ex-off');
    chip(`SO_REUSEPORT ${s.reuseport ? t.on : t.off}`, s.reuseport ? 'rl-ex-on' : 'rl-ex-off');
    chip(`${t.uid} ${s.uid ?? 0}`);
    return li;
  }

  #describeBind(q: BindQuestion, box: HTMLElement): void {
    const t = this.#t;
    box.append(h('p', 'rl-ex-lead', t.sockets(q.kernel)));
    const ol = box.appendChild(h('ol', 'rl-ex-socks'));
    q.sockets.forEach((s, i) => {
      const fresh = i === q.sockets.length - 1;
      const li = ol.appendChild(this.#sockLine(s, fresh ? t.newSocket : t.socket(i)));
      li.dataset.socket = String(i);
      const chips = li.querySelector('.rl-ex-chips')!;
      chips.append(h('span', 'rl-ex-chip rl-ex-state', fresh ? t.newCalls : t.state[s.afterBind ?? 'listen']));
      if (fresh) li.classList.add('rl-ex-new');
    });
  }

  /** Simulates every choice of a model question, with progress, then shows it. */
  #simulate(q: ModelQuestion, focus: boolean): void {
    this.#phase = 'simulating';
    const mine = this.#shown;
    const t = this.#t;
    const status = this.#body.appendChild(h('p', 'rl-ex-sim', t.simulating(0, q.scenarios.length), { role: 'status' }));
    runModelQuestion(q, this.#sim!, (d, n) => {
      if (mine === this.#shown) status.textContent = t.simulating(d, n);
    }).then(
      (ok) => {
        if (mine !== this.#shown) return;
        if (ok) this.#show(focus);
        else status.textContent = t.simStopped;
      },
      (e: unknown) => {
        if (mine !== this.#shown) return;
        status.textContent = e instanceof Error ? e.message : String(e);
        hostOf(this.#el).dataset.state = 'error';
      },
    );
  }

  /** Clears the question area for what comes next. */
  #clear(): void {
    this.#shown++;
    this.#resize?.disconnect();
    this.#body.replaceChildren();
    this.#after.replaceChildren();
    this.#live.textContent = '';
  }

  /** Shows question `at`; `focus` moves focus to it. */
  #show(focus: boolean): void {
    this.#clear();
    const t = this.#t;
    const id = this.#id;
    const q = this.#qs[this.#at]!;
    this.#bars();
    if (q.kind === 'model' && !q.reports) {
      this.#simulate(q, focus);
      return;
    }
    this.#phase = 'asking';
    // The question first, so focus moved to it reads on through the facts to the choices.
    const ask = this.#body.appendChild(h('p', 'rl-ex-ask', t.ask[this.#kind], { id: `${id}-ask`, tabindex: '-1' }));
    const box = this.#body.appendChild(h('div', 'rl-ex-question'));
    if (q.kind === 'syn') this.#describeSyn(q, box);
    else if (q.kind === 'bind') this.#describeBind(q, box);
    else describeModel(q, box, t, this.#st, this.#lang);
    const group = this.#body.appendChild(h('div', 'rl-ex-choices', undefined, { role: 'group', 'aria-labelledby': `${id}-ask` }));
    let hinted = false;
    if (q.kind === 'syn') {
      const hintBtn = h('button', 'rl-ex-hint-toggle', t.showHint, { type: 'button', 'aria-expanded': 'false', 'aria-controls': `${id}-hint` });
      const hint = h('div', 'rl-ex-hint', undefined, { id: `${id}-hint`, hidden: '' });
      hint.append(h('p', '', t.hintHash(q.explain.hash.hashHex, q.explain.hash.formula)));
      hint.append(h('p', '', q.explain.pick.kind === 'reservoir' ? t.hintRule.reservoir : t.hintRule.group));
      hintBtn.addEventListener('click', () => {
        const open = hint.hasAttribute('hidden');
        hint.hidden = !open;
        hinted ||= open;
        hintBtn.setAttribute('aria-expanded', String(open));
        hintBtn.textContent = open ? t.hideHint : t.showHint;
      });
      this.#body.insertBefore(hintBtn, group);
      this.#body.insertBefore(hint, group);
    }
    const buttons: HTMLButtonElement[] = [];
    for (const c of this.#choicesOf(q)) {
      const b = group.appendChild(h('button', 'rl-ex-choice', undefined, { type: 'button' }));
      b.append(h('span', 'rl-ex-choice-text', this.#choiceLabel(q, c)));
      b.dataset.choice = String(c);
      b.addEventListener('click', () => {
        // One answer per question: a second click on any choice does nothing.
        if (this.#phase !== 'asking') return;
        this.#answer(q, c, buttons, hinted);
      });
      buttons.push(b);
    }
    if (focus) ask.focus();
  }

  #answer(q: Question, choice: number | string, buttons: HTMLButtonElement[], hinted: boolean): void {
    this.#phase = 'answered';
    const t = this.#t;
    const lang = this.#lang;
    const expected = q.expected;
    const correct = choice === expected;
    if (correct) this.#score++;
    this.#answers.push({ choice: this.#choiceLabel(q, choice), correct });
    this.#bars();
    for (const b of buttons) {
      b.setAttribute('aria-disabled', 'true');
      const c = b.dataset.choice!;
      const isExpected = c === String(expected);
      const isChosen = c === String(choice);
      if (isExpected) b.classList.add('rl-ex-expected');
      if (isChosen) b.classList.add(correct ? 'rl-ex-chosen-right' : 'rl-ex-chosen-wrong');
      if (isExpected || isChosen) b.append(h('span', 'rl-ex-mark', isExpected ? `✓ ${t.rightAnswer}` : `✗ ${t.yourAnswer}`));
    }
    // The verdict, and for bind the model's rule and the conflicting socket: said once by the live region.
    const said: string[] = [];
    if (q.kind === 'syn') said.push(correct ? t.synRight(q.expected) : t.synWrong(choice as number, q.expected));
    else if (q.kind === 'model') {
      const right = this.#choiceLabel(q, q.expected);
      said.push(correct ? t.modelRight(right) : t.modelWrong(this.#choiceLabel(q, choice), right));
      const v = q.choices.find((x) => x.id === q.expected)!;
      said.push(t.tell[v.accept]);
    } else {
      said.push(correct ? t.bindRight(t.outcome[q.expected]) : t.bindWrong(t.outcome[choice as BindOutcome], t.outcome[q.expected]));
      if (q.refusal) {
        const rule = sayRefusal(lang, q.refusal);
        said.push(`${rule.charAt(0).toUpperCase()}${rule.slice(1)}${lang === 'zh-CN' ? '。' : '.'}`);
        if (q.refusal.with !== null) said.push(t.conflicts(q.refusal.with));
      } else said.push(t.noConflict);
    }
    this.#live.replaceChildren(...said.map((s, i) => h('p', i === 0 ? `rl-ex-verdict ${correct ? 'rl-ex-right' : 'rl-ex-wrong'}` : '', s)));
    if (q.kind === 'bind' && q.refusal?.with != null) {
      const li = this.#body.querySelector(`.rl-ex-sock[data-socket="${q.refusal.with}"]`);
      li?.classList.add('rl-ex-conflict');
      li?.querySelector('.rl-ex-chips')?.append(h('span', 'rl-ex-chip rl-ex-badge', t.conflictBadge));
    }
    const last = this.#at === this.#qs.length - 1;
    const next = this.#after.appendChild(h('button', 'rl-primary rl-ex-next', last ? t.finish : t.next, { type: 'button' }));
    next.addEventListener('click', () => {
      if (last) this.#summary();
      else {
        this.#at++;
        this.#show(true);
      }
    });
    if (q.kind === 'syn') {
      const det = this.#after.appendChild(h('details', 'rl-explain rl-ex-why'));
      det.open = true;
      det.append(h('summary', '', t.why));
      const card = det.appendChild(h('div'));
      renderExplain(card, explainView(q.explain, lang), 3, t.card);
    }
    if (q.kind === 'model') revealModel(q, this.#after.appendChild(h('div', 'rl-ex-why')), t, this.#st, lang);
    emit(this.#el, 'answered', { kind: this.#kind, question: this.#at, choice, correct, expected, hinted });
    if (last) emit(this.#el, 'completed', { kind: this.#kind, seed: this.#seed, score: this.#score, total: this.#qs.length });
    next.focus();
  }

  /** The run's score and each answer, with a new run on the same seed or the next one. */
  #summary(): void {
    this.#clear();
    this.#phase = 'summary';
    const t = this.#t;
    this.#progress.textContent = t.done;
    const head = this.#body.appendChild(h('p', 'rl-ex-final', t.final(this.#score, this.#qs.length), { tabindex: '-1' }));
    const ol = this.#body.appendChild(h('ol', 'rl-ex-recap'));
    this.#answers.forEach((a, i) => {
      const q = this.#qs[i]!;
      ol.append(
        h(
          'li',
          a.correct ? 'rl-ex-right' : 'rl-ex-wrong',
          `${a.correct ? '✓' : '✗'} ${a.choice}${a.correct ? '' : t.recapRight(this.#choiceLabel(q, q.expected))}`,
        ),
      );
    });
    const again = this.#after.appendChild(h('button', 'rl-primary', t.again, { type: 'button' }));
    again.addEventListener('click', () => {
      this.#start(this.#seed);
      this.#body.querySelector<HTMLElement>('.rl-ex-ask')?.focus();
    });
    const fresh = this.#after.appendChild(h('button', '', t.fresh, { type: 'button' }));
    fresh.addEventListener('click', () => {
      this.#start((this.#seed + 1) >>> 0);
      this.#body.querySelector<HTMLElement>('.rl-ex-ask')?.focus();
    });
    head.focus();
  }
}

/** Mounts the exercise into `el`; returns `dispose`. */
export async function mountExercise(el: HTMLElement, options: ExerciseOptions = {}): Promise<() => void> {
  const w = await ExerciseWidget.mount(el, options);
  return () => w.dispose();
}

function readExercise(el: HTMLElement): ExerciseOptions {
  const num = (name: string): number | undefined => {
    const v = el.getAttribute(name);
    return v === null || v.trim() === '' ? undefined : Number(v);
  };
  return {
    kind: (el.getAttribute('kind') as ExerciseKind | null) ?? undefined,
    kernel: el.getAttribute('kernel') ?? undefined,
    seed: num('seed'),
    count: num('count'),
  };
}

/** Registers `<reuseport-exercise>` once (the class is made here, so Node tests can import this module). */
export function defineExerciseElement(): void {
  defineIsland('reuseport-exercise', islandElement(mountExercise, readExercise, ['kind', 'kernel', 'seed', 'count']));
}
