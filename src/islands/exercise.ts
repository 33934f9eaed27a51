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
import { sayRefusal, type Errno, type Refusal } from '../model/messages';
import { renderExplain } from '../render/explain-card';
import { tableElement } from '../render/table';
import { explainView } from '../scene/explain-view';
import { Rng, mix32 } from '../scene/dispatch/rng';
import { hex32 } from '../hex';
import { defineIsland, emit, hostOf, islandElement } from './element';
import { exerciseText } from './exercise-text';
import { h } from './dom';
import { pageLang } from './site';
import { describeModel, modelQuestion, revealModel, runModelQuestion, type ModelQuestion } from './exercise-model';
import { scenarioText, variantTitle } from './scenario-text';
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

let uid = 0;

/** Mounts the exercise into `el`; returns `dispose`. */
export async function mountExercise(el: HTMLElement, options: ExerciseOptions = {}): Promise<() => void> {
  const kind = options.kind ?? 'syn';
  if (!KINDS.includes(kind)) throw new Error(`<reuseport-exercise>: kind must be "syn", "bind" or "model", not "${String(kind)}"`);
  const kernel = options.kernel ?? '6.18';
  const count = options.count ?? 5;
  if (!Number.isInteger(count) || count < 1 || count > MAX_COUNT)
    throw new Error(`<reuseport-exercise>: count must be a whole number from 1 to ${MAX_COUNT}, not ${String(options.count)}`);
  const firstSeed = options.seed ?? 1;
  if (!Number.isInteger(firstSeed) || firstSeed < 0) throw new Error(`<reuseport-exercise>: seed must be a whole number from 0, not ${String(options.seed)}`);
  await (kind === 'bind' ? Promise.all([loadModel(), loadLookup()]) : loadModel());
  resolveProfile(kernel);
  const lang = pageLang(el);
  const t = exerciseText(lang);
  const st = scenarioText(lang);
  // The accept-model questions run in the simulation worker; the others need no worker.
  const sim = kind === 'model' ? new SimSession() : undefined;
  let curated: CuratedView[] = [];
  try {
    if (sim) curated = await sim.curated();
  } catch (e) {
    sim?.dispose();
    throw e;
  }
  const id = `rl-ex-${++uid}`;

  const root = el.appendChild(h('section', `rl-ex rl-ex-${kind}`, undefined, { 'aria-labelledby': `${id}-title` }));
  root.append(h('p', 'rl-ex-title', t.title[kind], { id: `${id}-title` }));
  const bar = root.appendChild(h('p', 'rl-ex-bar'));
  const progress = bar.appendChild(h('span', 'rl-ex-progress'));
  const scoreEl = bar.appendChild(h('span', 'rl-ex-score'));
  const body = root.appendChild(h('div', 'rl-ex-body'));
  // One live region for the whole life of the widget, so each verdict is announced.
  const live = root.appendChild(h('div', 'rl-ex-feedback', undefined, { role: 'status', 'aria-live': 'polite' }));
  const after = root.appendChild(h('div', 'rl-ex-after'));

  let seed = firstSeed;
  let qs: Question[] = [];
  let at = 0;
  let score = 0;
  let answers: { choice: string; correct: boolean }[] = [];

  const choiceLabel = (q: Question, c: number | string): string => {
    if (q.kind === 'syn') return t.listener(c as number);
    if (q.kind === 'bind') return t.outcome[c as BindOutcome];
    const v = q.choices.find((x) => x.id === c);
    return v ? variantTitle(v, st) : String(c);
  };
  const choicesOf = (q: Question): (number | string)[] => (q.kind === 'model' ? q.choices.map((v) => v.id) : q.choices);
  /** Counts the shows, so a simulation that ends after the learner moved on is dropped. */
  let shown = 0;

  function start(newSeed: number): void {
    seed = newSeed;
    qs = questions(kind, seed, count, kernel, curated);
    at = 0;
    score = 0;
    answers = [];
    show(false);
    emit(el, 'started', { kind, kernel, seed, count });
  }

  function bars(): void {
    progress.textContent = t.progress(at + 1, qs.length);
    scoreEl.textContent = t.score(score, answers.length);
  }

  let resize: ResizeObserver | undefined;
  /** A box that scrolls sideways is a focusable, named region only while it does scroll (one tab stop fewer otherwise). */
  function scrollable(wrap: HTMLElement, name: string): void {
    const set = () => {
      if (wrap.scrollWidth > wrap.clientWidth) {
        wrap.setAttribute('role', 'region');
        wrap.setAttribute('aria-label', name);
        wrap.tabIndex = 0;
      } else for (const a of ['role', 'aria-label', 'tabindex']) wrap.removeAttribute(a);
    };
    resize?.disconnect();
    resize = 'ResizeObserver' in window ? new ResizeObserver(set) : undefined;
    resize?.observe(wrap);
    set();
  }

  function describeSyn(q: SynQuestion, box: HTMLElement): void {
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
      scrollable(wrap, t.slots);
    } else if (q.chain.length) {
      box.append(h('p', 'rl-ex-note', `${t.chain} (${t.chainHint}): ${q.chain.join(', ')}`));
    }
  }

  function sockLine(s: SocketSetup, name: string): HTMLElement {
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

  function describeBind(q: BindQuestion, box: HTMLElement): void {
    box.append(h('p', 'rl-ex-lead', t.sockets(q.kernel)));
    const ol = box.appendChild(h('ol', 'rl-ex-socks'));
    q.sockets.forEach((s, i) => {
      const fresh = i === q.sockets.length - 1;
      const li = ol.appendChild(sockLine(s, fresh ? t.newSocket : t.socket(i)));
      li.dataset.socket = String(i);
      const chips = li.querySelector('.rl-ex-chips')!;
      chips.append(h('span', 'rl-ex-chip rl-ex-state', fresh ? t.newCalls : t.state[s.afterBind ?? 'listen']));
      if (fresh) li.classList.add('rl-ex-new');
    });
  }

  /** Simulates every choice of a model question, with progress, then shows it. */
  function simulate(q: ModelQuestion, focus: boolean): void {
    const mine = shown;
    const status = body.appendChild(h('p', 'rl-ex-sim', t.simulating(0, q.scenarios.length), { role: 'status' }));
    runModelQuestion(q, sim!, (d, n) => {
      if (mine === shown) status.textContent = t.simulating(d, n);
    }).then(
      (ok) => {
        if (mine !== shown) return;
        if (ok) show(focus);
        else status.textContent = t.simStopped;
      },
      (e: unknown) => {
        if (mine !== shown) return;
        status.textContent = e instanceof Error ? e.message : String(e);
        hostOf(el).dataset.state = 'error';
      },
    );
  }

  /** Shows question `at` (or the summary after the last); `focus` moves focus to it. */
  function show(focus: boolean): void {
    shown++;
    resize?.disconnect();
    body.replaceChildren();
    after.replaceChildren();
    live.textContent = '';
    const q = qs[at]!;
    bars();
    if (q.kind === 'model' && !q.reports) {
      simulate(q, focus);
      return;
    }
    // The question first, so focus moved to it reads on through the facts to the choices.
    const ask = body.appendChild(h('p', 'rl-ex-ask', t.ask[kind], { id: `${id}-ask`, tabindex: '-1' }));
    const box = body.appendChild(h('div', 'rl-ex-question'));
    if (q.kind === 'syn') describeSyn(q, box);
    else if (q.kind === 'bind') describeBind(q, box);
    else describeModel(q, box, t, st, lang);
    const group = body.appendChild(h('div', 'rl-ex-choices', undefined, { role: 'group', 'aria-labelledby': `${id}-ask` }));
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
      body.insertBefore(hintBtn, group);
      body.insertBefore(hint, group);
    }
    const buttons: HTMLButtonElement[] = [];
    let done = false;
    for (const c of choicesOf(q)) {
      const b = group.appendChild(h('button', 'rl-ex-choice', undefined, { type: 'button' }));
      b.append(h('span', 'rl-ex-choice-text', choiceLabel(q, c)));
      b.dataset.choice = String(c);
      b.addEventListener('click', () => {
        if (done) return;
        done = true;
        answer(q, c, buttons, hinted);
      });
      buttons.push(b);
    }
    if (focus) ask.focus();
  }

  function answer(q: Question, choice: number | string, buttons: HTMLButtonElement[], hinted: boolean): void {
    const expected = q.expected;
    const correct = choice === expected;
    if (correct) score++;
    answers.push({ choice: choiceLabel(q, choice), correct });
    bars();
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
      const right = choiceLabel(q, q.expected);
      said.push(correct ? t.modelRight(right) : t.modelWrong(choiceLabel(q, choice), right));
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
    live.replaceChildren(...said.map((s, i) => h('p', i === 0 ? `rl-ex-verdict ${correct ? 'rl-ex-right' : 'rl-ex-wrong'}` : '', s)));
    if (q.kind === 'bind' && q.refusal?.with != null) {
      const li = body.querySelector(`.rl-ex-sock[data-socket="${q.refusal.with}"]`);
      li?.classList.add('rl-ex-conflict');
      li?.querySelector('.rl-ex-chips')?.append(h('span', 'rl-ex-chip rl-ex-badge', t.conflictBadge));
    }
    const last = at === qs.length - 1;
    const next = after.appendChild(h('button', 'rl-primary rl-ex-next', last ? t.finish : t.next, { type: 'button' }));
    next.addEventListener('click', () => {
      if (last) summary();
      else {
        at++;
        show(true);
      }
    });
    if (q.kind === 'syn') {
      const det = after.appendChild(h('details', 'rl-explain rl-ex-why'));
      det.open = true;
      det.append(h('summary', '', t.why));
      const card = det.appendChild(h('div'));
      renderExplain(card, explainView(q.explain, lang), 3, t.card);
    }
    if (q.kind === 'model') revealModel(q, after.appendChild(h('div', 'rl-ex-why')), t, st, lang);
    emit(el, 'answered', { kind, question: at, choice, correct, expected, hinted });
    if (last) emit(el, 'completed', { kind, seed, score, total: qs.length });
    next.focus();
  }

  function summary(): void {
    resize?.disconnect();
    body.replaceChildren();
    after.replaceChildren();
    live.textContent = '';
    progress.textContent = t.done;
    const head = body.appendChild(h('p', 'rl-ex-final', t.final(score, qs.length), { tabindex: '-1' }));
    const ol = body.appendChild(h('ol', 'rl-ex-recap'));
    answers.forEach((a, i) => {
      const q = qs[i]!;
      ol.append(
        h('li', a.correct ? 'rl-ex-right' : 'rl-ex-wrong', `${a.correct ? '✓' : '✗'} ${a.choice}${a.correct ? '' : t.recapRight(choiceLabel(q, q.expected))}`),
      );
    });
    const again = after.appendChild(h('button', 'rl-primary', t.again, { type: 'button' }));
    again.addEventListener('click', () => {
      start(seed);
      body.querySelector<HTMLElement>('.rl-ex-ask')?.focus();
    });
    const fresh = after.appendChild(h('button', '', t.fresh, { type: 'button' }));
    fresh.addEventListener('click', () => {
      start((seed + 1) >>> 0);
      body.querySelector<HTMLElement>('.rl-ex-ask')?.focus();
    });
    head.focus();
  }

  start(firstSeed);
  hostOf(el).dataset.state = 'ready';
  return () => {
    shown++;
    resize?.disconnect();
    sim?.dispose();
    root.remove();
  };
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
