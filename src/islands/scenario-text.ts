/**
 * The scenario widget's interface words: the shape its code reads, said in
 * the page's language by the catalogue (`ui.scenario.*` of messages/en.json
 * and messages/zh-CN.json). No sentence is written here.
 */
import { langOf, words, type Lang } from '../model/messages';
import { ACCEPT_MODELS, type AcceptModel, type Variant } from '../model/sim';
import type { FigureKey } from '../scene/scenario-view';
import type { Verdict } from '../scene/scenario-verdict';

export interface ScenarioText {
  title: (name: string) => string;
  model: Record<AcceptModel, string>;
  migrate: string;
  onKernel: (k: string) => string;
  figure: Record<FigureKey, string>;
  simulated: string;
  measuredShort: string;
  sharesLabel: string;
  run: string;
  stop: string;
  seed: string;
  seedBad: string;
  load: string;
  loadHint: string;
  loadBad: string;
  progress: (run: number, runs: number, arrived: number, total: number) => string;
  finished: (runs: number) => string;
  partial: string;
  accepts: string;
  worker: (n: number) => string;
  workerHead: string;
  figureHead: string;
  depth: string;
  p99: string;
  assumptions: (kernel: string) => string;
  unknown: (name: string, known: string) => string;
  failed: (msg: string) => string;
  table: string;
  match: MatchText;
  ranAs: (cpus: number, connections: number, kernel: string) => string;
  /** The shares' verdict: whether they agree, by how much they differ, and the threshold. */
  sharesVerdict: (v: Verdict['shares'], lang: string) => string;
  /** The latency's verdict, and why it differs on a machine of `cpus` CPUs. */
  latencyVerdict: (v: Verdict['latency'], cpus: number, lang: string) => string;
  /** Why the simulated and measured counts of wasted wake-ups differ (they count different things). */
  wastedCounted: string;
  /** Each curated scenario's page title (the pages' own titles). */
  scenarioTitle: Record<string, string>;
}

/** The "which scenario looks like mine?" form. */
export interface MatchText {
  counts: string;
  countsHint: string;
  p50: string;
  p99: string;
  latencyHint: string;
  find: string;
  progress: (done: number, total: number) => string;
  partial: string;
  results: string;
  yours: string;
  shapeHead: [string, string, string, string, string];
  shapeCaption: string;
  open: (title: string) => string;
  countsBad: (position: number, value: string) => string;
  countsCount: (n: number) => string;
  latencyBad: (field: string) => string;
}

const FIGURES: readonly FigureKey[] = ['jain', 'maxMin', 'maxShare', 'p50', 'p99', 'stddev', 'synDrops', 'reset', 'migrated', 'wasted', 'local'];
/** The curated scenarios, by their pages' names. */
const SCENARIOS = [
  'six-connections',
  'shared-queue-under-load',
  'per-worker-queues-latency',
  'slow-worker',
  'stalled-worker',
  'reload',
  'few-clients',
  'long-lived-favourite',
  'incoming-cpu',
  'fork-vs-reuseport',
] as const;

/** The scenario widget's words in a page language, from the catalogue (`ui.scenario.*` of messages/*.json). */
function build(lang: Lang): ScenarioText {
  const w = words(lang, 'scenario');
  const { num } = w;
  return {
    title: (name) => w.say('title', { name }),
    model: w.record('model', ACCEPT_MODELS),
    migrate: w.say('migrate'),
    onKernel: (kernel) => w.say('on_kernel', { kernel }),
    figure: w.record('figure', FIGURES),
    simulated: w.say('simulated'),
    measuredShort: w.say('measured_short'),
    sharesLabel: w.say('shares_label'),
    run: w.say('run'),
    stop: w.say('stop'),
    seed: w.say('seed'),
    seedBad: w.say('seed_bad'),
    load: w.say('load'),
    loadHint: w.say('load_hint'),
    loadBad: w.say('load_bad'),
    progress: (run, runs, arrived, total) => w.say('progress', { run: run + 1, runs, arrived: num(arrived), total: num(total) }),
    finished: (runs) => w.count('finished', runs),
    partial: w.say('partial'),
    accepts: w.say('accepts'),
    // A worker's label is a name in every language.
    worker: (n) => `w${n}`,
    workerHead: w.say('worker_head'),
    figureHead: w.say('figure_head'),
    depth: w.say('depth'),
    p99: w.say('p99'),
    assumptions: (kernel) => w.say('assumptions', { kernel }),
    unknown: (name, known) => w.say('unknown', { name, known }),
    failed: (message) => w.say('failed', { message }),
    table: w.say('table'),
    match: {
      counts: w.say('match.counts'),
      countsHint: w.say('match.countsHint'),
      p50: w.say('match.p50'),
      p99: w.say('match.p99'),
      latencyHint: w.say('match.latencyHint'),
      find: w.say('match.find'),
      progress: (done, total) => w.say('match.progress', { done: num(done), total: num(total) }),
      partial: w.say('match.partial'),
      results: w.say('match.results'),
      yours: w.say('match.yours'),
      shapeHead: w.list('match.shapeHead', 5) as MatchText['shapeHead'],
      shapeCaption: w.say('match.shapeCaption'),
      open: (title) => w.say('match.open', { title }),
      countsBad: (position, value) => w.say('match.countsBad', { position, value }),
      countsCount: (n) => w.say('match.countsCount', { n }),
      latencyBad: (field) => w.say('match.latencyBad', { field }),
    },
    ranAs: (cpus, connections, kernel) => w.count('ran_as', cpus, { connections: num(connections), kernel }),
    sharesVerdict: (v, numbers) =>
      w.say(v.agrees ? 'shares_verdict.agree' : 'shares_verdict.differ', { error: points(v.error, numbers), max: points(v.max, numbers) }),
    latencyVerdict: (v, cpus, numbers) =>
      w.say(v.agrees ? 'latency_verdict.agree' : 'latency_verdict.differ', {
        distance: percent(v.distance, numbers),
        max: percent(v.max, numbers),
        why: v.why === 'saturated' ? w.say('latency_why.saturated', { cpus }) : v.why === 'scheduler' ? w.say('latency_why.scheduler') : '',
      }),
    wastedCounted: w.say('wasted_counted'),
    scenarioTitle: w.record('scenario_title', SCENARIOS),
  };
}

/** A share difference (0 to 1) in percentage points, to one decimal (two below one point). */
function points(v: number, lang: string): string {
  const p = v * 100;
  return p.toLocaleString(lang, { maximumFractionDigits: p < 1 ? 2 : 1 });
}

/** A relative distance as a percentage. */
function percent(v: number, lang: string): string {
  return `${Math.round(v * 100).toLocaleString(lang)}%`;
}

/** The words for a page language (`zh…` reads Chinese, anything else English). */
export function scenarioText(lang: string): ScenarioText {
  return build(langOf(lang));
}

/** Both languages, for tests. */
export const SCENARIO_TEXT = { en: build('en'), zh: build('zh-CN') } as const;

/** A variant's name: its accept model, and what else differs. */
export function variantTitle(v: Variant, t: ScenarioText): string {
  return [t.model[v.accept], v.tcpMigrateReq ? t.migrate : '', v.kernel ? t.onKernel(v.kernel) : ''].filter(Boolean).join(', ');
}

/** A figure as a card shows it: shares to three places, ratios to two, latencies to one or two; a missing one (no request finished) reads "∞". */
export function formatFigure(v: number | null | undefined, key: string, lang: string): string {
  if (v === null || v === undefined || Number.isNaN(v)) return '∞';
  const digits = key === 'jain' || key === 'maxShare' || key === 'local' ? 3 : key === 'maxMin' ? 2 : Number.isInteger(v) ? 0 : v < 10 ? 2 : 1;
  return v.toLocaleString(lang, { maximumFractionDigits: digits, minimumFractionDigits: key === 'jain' ? 3 : 0 });
}
