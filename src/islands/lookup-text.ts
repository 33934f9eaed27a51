/**
 * The lookup widget's interface words: the shape its code reads, said in the
 * page's language by the catalogue (`ui.tuples.*` of messages/en.json and
 * messages/zh-CN.json). No sentence is written here.
 */
import { langOf, words, type Lang } from '../model/messages';
import { cardText, type ExplainCardText } from '../render/explain-card';

export interface LookupText {
  help: string;
  tuples: string;
  kernel: string;
  kernelHint: string;
  /** The profile in use; `basis` is where its rules were read, already said in this language (`sayBasis`). */
  profile: (release: string, basis: string) => string;
  proto: string;
  listeners: string;
  /** `group`: the largest group from 4.6; `chain`: the most listeners the model builds (the model's `maxGroupMembers`, `maxListeners`). */
  listenersHint: (group: number, chain: number) => string;
  bound: string;
  boundHint: string;
  boundPlaceholder: string;
  closed: string;
  closedHint: string;
  cpu: string;
  secret: string;
  secretHint: string;
  newBoot: string;
  inner: string;
  innerHint: string;
  explain: string;
  tooManyLines: (lines: number, max: number) => string;
  listenersBad: string;
  secretBad: string;
  innerBad: string;
  secretMissing: string;
  innerMissing: string;
  underGiven: (v: string) => string;
  underRandom: (v: string) => string;
  closedBad: string;
  cpuBad: string;
  boundBad: (msg: string) => string;
  /** Prefix of {@link boundBad}'s message. */
  boundPrefix: string;
  noTuple: string;
  lineError: (line: number, err: string) => string;
  cannotBuild: (msg: string) => string;
  notAnswered: (n: number) => string;
  explained: (good: number, bad: number) => string;
  /** Answering is under way: `done` of `all` lines. */
  working: (done: number, all: number) => string;
  results: string;
  perListener: string;
  perListenerHead: [string, string];
  none: string;
  chosen: string;
  chosenHead: [string, string, string, string, string];
  firstRows: (n: number) => string;
  detail: (line: number, listener: string) => string;
  detailedFirst: (n: number) => string;
  card: ExplainCardText;
}

/** The lookup widget's words in a page language, from the catalogue (`ui.tuples.*` of messages/*.json). */
function build(lang: Lang): LookupText {
  const w = words(lang, 'tuples');
  return {
    help: w.say('help'),
    tuples: w.say('tuples'),
    kernel: w.say('kernel'),
    kernelHint: w.say('kernel_hint'),
    profile: (release, basis) => w.say('profile', { release, basis }),
    proto: w.say('proto'),
    listeners: w.say('listeners'),
    listenersHint: (group, chain) => w.say('listeners_hint', { group, chain: w.num(chain) }),
    bound: w.say('bound'),
    boundHint: w.say('bound_hint'),
    boundPlaceholder: w.say('bound_placeholder'),
    closed: w.say('closed'),
    closedHint: w.say('closed_hint'),
    cpu: w.say('cpu'),
    secret: w.say('secret'),
    secretHint: w.say('secret_hint'),
    newBoot: w.say('new_boot'),
    inner: w.say('inner'),
    innerHint: w.say('inner_hint'),
    explain: w.say('explain'),
    tooManyLines: (lines, max) => w.say('too_many_lines', { lines, max }),
    listenersBad: w.say('listeners_bad'),
    secretBad: w.say('secret_bad'),
    innerBad: w.say('inner_bad'),
    secretMissing: w.say('secret_missing'),
    innerMissing: w.say('inner_missing'),
    underGiven: (secret) => w.say('under_given', { secret }),
    underRandom: (secret) => w.say('under_random', { secret }),
    closedBad: w.say('closed_bad'),
    cpuBad: w.say('cpu_bad'),
    boundBad: (message) => w.say('bound_bad', { message }),
    boundPrefix: w.say('bound_prefix'),
    noTuple: w.say('no_tuple'),
    lineError: (line, error) => w.say('line_error', { line, error }),
    cannotBuild: (message) => w.say('cannot_build', { message }),
    notAnswered: (n) => w.count('not_answered', n),
    explained: (good, bad) => w.count('explained', good, { errors: bad ? w.say('explained_errors', { bad: w.num(bad) }) : '' }),
    working: (done, all) => w.say('working', { done: w.num(done), all: w.num(all) }),
    results: w.say('results'),
    perListener: w.say('per_listener'),
    perListenerHead: w.list('per_listener_head', 2) as [string, string],
    none: w.say('none'),
    chosen: w.say('chosen'),
    chosenHead: w.list('chosen_head', 5) as [string, string, string, string, string],
    firstRows: (n) => w.say('first_rows', { n: w.num(n) }),
    detail: (line, listener) => w.say('detail', { line, listener }),
    detailedFirst: (n) => w.say('detailed_first', { n: w.num(n) }),
    card: cardText(lang),
  };
}

/** The words for the page's language. */
export function lookupText(lang = document.documentElement.lang): LookupText {
  return build(langOf(lang));
}

/** Both languages, for tests. */
export const LOOKUP_TEXT = { en: build('en'), zh: build('zh-CN') } as const;
