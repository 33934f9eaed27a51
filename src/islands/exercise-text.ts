/**
 * The exercise widget's interface words: the shape its code reads, said in
 * the page's language by the catalogue (`ui.exercise.*` of messages/en.json
 * and messages/zh-CN.json). No sentence is written here.
 */
import { langOf, words, type Errno, type Lang } from '../model/messages';
import { cardText, type ExplainCardText } from '../render/explain-card';
import { ACCEPT_MODELS, type AcceptModel } from '../model/sim';

export interface ExerciseText {
  /** The widget's accessible name, per kind. */
  title: { syn: string; bind: string; model: string };
  progress: (question: number, total: number) => string;
  score: (score: number, answered: number) => string;
  /** The question asked, per kind. */
  ask: { syn: string; bind: string; model: string };
  /** The group of a SYN question. */
  group: (proto: string, listeners: number, bound: string, kernel: string) => string;
  hashKey: string;
  hashKeyHint: string;
  syn: string;
  slots: string;
  /** Row headings of the socks[] table. */
  slotHead: [string, string];
  chain: string;
  chainHint: string;
  closed: (listeners: string) => string;
  listener: (n: number) => string;
  showHint: string;
  hideHint: string;
  hintHash: (hash: string, formula: string) => string;
  /** How the group picks from the hash, by the model's selection kind. */
  hintRule: { group: string; reservoir: string };
  /** The sockets of a bind question. */
  sockets: (kernel: string) => string;
  socket: (n: number) => string;
  newSocket: string;
  newCalls: string;
  on: string;
  off: string;
  uid: string;
  /** A socket's state after its calls, by the model's `SockState`. */
  state: { listen: string; bound: string; time_wait: string; connected: string };
  /** The answer choices of a bind question. */
  outcome: Record<'success' | Errno, string>;
  synRight: (listener: number) => string;
  synWrong: (chose: number, listener: number) => string;
  bindRight: (outcome: string) => string;
  bindWrong: (chose: string, outcome: string) => string;
  yourAnswer: string;
  rightAnswer: string;
  /** After a wrong answer in the recap: what was right. */
  recapRight: (answer: string) => string;
  conflicts: (socket: number) => string;
  conflictBadge: string;
  noConflict: string;
  why: string;
  next: string;
  finish: string;
  done: string;
  final: (score: number, total: number) => string;
  again: string;
  fresh: string;
  card: ExplainCardText;
  /** The workload of an accept-model question. */
  workload: (title: string, workers: number, cpus: number, connections: number, kernel: string) => string;
  simSeed: (seed: number) => string;
  simulating: (done: number, total: number) => string;
  simStopped: string;
  modelRight: (model: string) => string;
  modelWrong: (chose: string, model: string) => string;
  sameWorkload: string;
  shownRun: string;
  /** What gives each accept model away in a histogram and its figures. */
  tell: Record<AcceptModel, string>;
}

const KINDS = ['syn', 'bind', 'model'] as const;
const STATES = ['listen', 'bound', 'time_wait', 'connected'] as const;
const OUTCOMES = [
  'success',
  'EADDRINUSE',
  'EINVAL',
  'ENOMEM',
  'EBADF',
  'EOPNOTSUPP',
  'ENOPROTOOPT',
  'EISCONN',
  'ENOTCONN',
  'ENETUNREACH',
  'ENODEV',
] as const satisfies readonly ('success' | Errno)[];

/** The exercise widget's words in a page language, from the catalogue (`ui.exercise.*` of messages/*.json). */
function build(lang: Lang): ExerciseText {
  const w = words(lang, 'exercise');
  return {
    title: w.record('title', KINDS),
    progress: (question, total) => w.say('progress', { question, total }),
    score: (score, answered) => w.say('score', { score, answered }),
    ask: w.record('ask', KINDS),
    group: (proto, n, bound, kernel) => w.say('group', { proto, n, bound, kernel }),
    hashKey: w.say('hash_key'),
    hashKeyHint: w.say('hash_key_hint'),
    syn: w.say('syn'),
    slots: w.say('slots'),
    slotHead: w.list('slot_head', 2) as [string, string],
    chain: w.say('chain'),
    chainHint: w.say('chain_hint'),
    closed: (listeners) => w.say('closed', { listeners }),
    listener: (n) => w.say('listener', { n }),
    showHint: w.say('show_hint'),
    hideHint: w.say('hide_hint'),
    hintHash: (hash, formula) => w.say('hint_hash', { hash, formula }),
    hintRule: w.record('hint_rule', ['group', 'reservoir'] as const),
    sockets: (kernel) => w.say('sockets', { kernel }),
    socket: (n) => w.say('socket', { n }),
    newSocket: w.say('new_socket'),
    newCalls: w.say('new_calls'),
    on: w.say('on'),
    off: w.say('off'),
    uid: w.say('uid'),
    state: w.record('state', STATES),
    outcome: w.record('outcome', OUTCOMES),
    synRight: (listener) => w.say('syn_right', { listener }),
    synWrong: (chose, listener) => w.say('syn_wrong', { chose, listener }),
    bindRight: (outcome) => w.say('bind_right', { outcome }),
    bindWrong: (chose, outcome) => w.say('bind_wrong', { chose, outcome }),
    yourAnswer: w.say('your_answer'),
    rightAnswer: w.say('right_answer'),
    recapRight: (answer) => w.say('recap_right', { answer }),
    conflicts: (socket) => w.say('conflicts', { socket }),
    conflictBadge: w.say('conflict_badge'),
    noConflict: w.say('no_conflict'),
    why: w.say('why'),
    next: w.say('next'),
    finish: w.say('finish'),
    done: w.say('done'),
    final: (score, total) => w.say('final', { score, total }),
    again: w.say('again'),
    fresh: w.say('fresh'),
    card: cardText(lang),
    workload: (title, workers, cpus, n, kernel) => w.say('workload', { title, workers, cpus, n: w.num(n), kernel }),
    simSeed: (seed) => w.say('sim_seed', { seed }),
    simulating: (done, total) => w.say('simulating', { run: done + 1, total }),
    simStopped: w.say('sim_stopped'),
    modelRight: (model) => w.say('model_right', { model }),
    modelWrong: (chose, model) => w.say('model_wrong', { chose, model }),
    sameWorkload: w.say('same_workload'),
    shownRun: w.say('shown_run'),
    tell: w.record('tell', ACCEPT_MODELS),
  };
}

/** The words for the page's language. */
export function exerciseText(lang = document.documentElement.lang): ExerciseText {
  return build(langOf(lang));
}

/** Both languages, for tests. */
export const EXERCISE_TEXT = { en: build('en'), zh: build('zh-CN') } as const;
