/**
 * The trace widgets' interface words: the shape their code reads, said in the
 * page's language by the catalogue (`ui.trace.*` of messages/en.json and
 * messages/zh-CN.json). No sentence is written here.
 */
import { langOf, words, type Lang, type WidgetKey } from '../model/messages';
import type { Spread, TraceSummary } from '../scene/trace-view';
import type { TraceViewText } from '../render/trace-view';

/** What a manifest entry says of itself: its file (the key) and the agent's English sentence for it. */
export interface Described {
  file: string;
  shows: string;
}

/** A recorded group, as the viewer's "Group" line says it (the trace file's `group`). */
export interface GroupFacts {
  proto: string;
  bind: string;
  port: number;
  listeners: number;
  closed?: number[];
  v6only?: boolean;
  tcpMigrateReq?: boolean;
}

/** How a recorded group chose: a program (its kind and modulus), SO_INCOMING_CPU pins, or the hash. */
export interface SelectionFacts {
  bpf?: { kind: string; modulus?: number } | null;
  incomingCpu?: { listener: number; cpu: number }[];
}

/** The trace widget's words; those its views say (render/trace-view.ts) are declared there. */
export interface TraceText extends TraceViewText {
  /** What a curated recording shows, in this language (the manifest's sentence is the agent's English). */
  shows: (e: Described) => string;
  /** The kernel line: release and the model's profile for it. */
  kernelLine: (release: string, profile: string) => string;
  groupLine: (g: GroupFacts) => string;
  selection: (s: SelectionFacts) => string;
  /** The comparison with the fork-against-reuseport article under a benchmark, for a machine of `nproc` CPUs. */
  benchNote: (nproc: number) => string;
  choose: string;
  orDrop: string;
  dropHere: string;
  loading: (name: string) => string;
  predicting: (done: number, total: number) => string;
  cancel: string;
  cancelled: string;
  tooBig: (mb: number, maxMb: number) => string;
  notJson: (name: string, msg: string) => string;
  invalid: (name: string) => string;
  fetchFailed: (url: string, status: string) => string;
  /** The link to the visualizer's replay of a trace of the site, and what to do with a file of one's own. */
  replay: string;
  replayFile: string;
  layout: string;
  kernel: string;
  group: string;
  program: string;
  recorded: string;
  command: string;
  /** After a cut value: how many characters were left out. */
  cutMore: (left: number) => string;
  key: string;
  keyFromManifest: (k: string, from?: string) => string;
  keyNone: string;
  keyLabel: string;
  keyBad: string;
  apply: string;
  agreementAll: (a: TraceSummary['all'], n: number) => string;
  agreementHeld: (a: TraceSummary['heldOut'], train: number) => string;
  spread: (s: Spread) => string;
  events: string;
  seq: string;
  tuple: string;
  cpu: string;
  kernelPick: string;
  modelPick: string;
  agrees: string;
  onlyMismatches: string;
  prev: string;
  next: string;
  page: (from: number, to: number, total: number) => string;
  open: string;
  none: string;
  benchTitle: string;
  benchSetup: (workers: number, clients: number, conns: number, accept: string, nproc: number) => string;
  benchCols: string[];
  benchPerWorker: string;
  benchWorkerAxis: string;
}

const pct = (a: number, b: number) => (b ? `${((100 * a) / b).toFixed(a === b ? 0 : 2)}%` : '–');

/** `[::1]` for an IPv6 address, the address itself otherwise. */
const hostOf = (bind: string): string => (bind.includes(':') ? `[${bind}]` : bind);

/** The curated recordings the catalogue says in each language (`ui.trace.shows.<file>`); others read as the manifest says. */
const SHOWN = new Set([
  'tcp-v4-specific-8.json',
  'tcp-v4-wildcard-8.json',
  'udp-v4-specific-8.json',
  'tcp-v4-closed-1-5.json',
  'tcp-v4-130.json',
  'tcp-v4-incoming-cpu.json',
  'udp-v4-bpf-cpu.json',
  'udp-v4-bpf-payload-mod-4.json',
  'tcp-v6-wildcard-netns.json',
  'bench-fork-vs-reuseport.json',
  'bench-fork-vs-reuseport-epoll.json',
]);

/** The trace widgets' words in a page language, from the catalogue (`ui.trace.*` of messages/*.json). */
function build(lang: Lang): TraceText {
  const w = words(lang, 'trace');
  const { num } = w;
  const sep = w.say('list_sep');
  return {
    shows: (e) => (SHOWN.has(e.file) ? w.say(`shows.${e.file}` as WidgetKey<'trace'>) : e.shows),
    kernelLine: (release, profile) => w.say('kernel_line', { release, profile }),
    groupLine: (g) =>
      w.say('group_line', {
        proto: g.proto.toUpperCase(),
        host: hostOf(g.bind),
        port: g.port,
        listeners: w.count('n_listener', g.listeners),
        closed: g.closed?.length ? w.say('group_closed', { listeners: g.closed.join(sep) }) : '',
        v6only: g.v6only ? w.say('group_v6only') : '',
        migrate: g.tcpMigrateReq ? w.say('group_migrate') : '',
      }),
    selection: (s) =>
      s.bpf
        ? s.bpf.kind === 'cpu'
          ? w.say('selection.cpu')
          : w.say('selection.payload', { modulus: String(s.bpf.modulus) })
        : s.incomingCpu?.length
          ? w.say('selection.incoming_cpu', { pins: s.incomingCpu.map((p) => `${p.listener}→${p.cpu}`).join(' ') })
          : w.say('selection.hash'),
    benchNote: (n) => w.count('bench_note', n),
    choose: w.say('choose'),
    orDrop: w.say('or_drop'),
    dropHere: w.say('drop_here'),
    loading: (name) => w.say('loading', { name }),
    predicting: (done, total) => w.say('predicting', { done: num(done), total: num(total) }),
    cancel: w.say('cancel'),
    cancelled: w.say('cancelled'),
    tooBig: (mb, max) => w.say('too_big', { size: mb.toFixed(1), max }),
    notJson: (name, message) => w.say('not_json', { name, message }),
    invalid: (name) => w.say('invalid', { name }),
    fetchFailed: (url, status) => w.say('fetch_failed', { url, status }),
    replay: w.say('replay'),
    replayFile: w.say('replay_file'),
    layout: w.say('layout'),
    kernel: w.say('kernel'),
    group: w.say('group'),
    program: w.say('program'),
    recorded: w.say('recorded'),
    command: w.say('command'),
    cutMore: (n) => w.say('cut_more', { n: num(n) }),
    key: w.say('key'),
    keyFromManifest: (key, from) => (from ? w.say('key_from_run', { key, from }) : w.say('key_from_trace', { key })),
    keyNone: w.say('key_none'),
    keyLabel: w.say('key_label'),
    keyBad: w.say('key_bad'),
    apply: w.say('apply'),
    agreementAll: (a, n) =>
      a.predicted === 0
        ? w.say('agreement_none', { n: num(n) })
        : w.say('agreement_all', {
            agreed: num(a.agreed),
            predicted: num(a.predicted),
            share: pct(a.agreed, a.predicted),
            needsKey: a.needsKey ? w.say('agreement_needs_key', { n: num(a.needsKey) }) : '',
          }),
    agreementHeld: (a, train) => w.say('agreement_held', { train, agreed: num(a.agreed), predicted: num(a.predicted), share: pct(a.agreed, a.predicted) }),
    spread: (s) => w.say('spread', { expected: s.expected.toFixed(1), ratio: Number.isFinite(s.maxOverMin) ? s.maxOverMin.toFixed(2) : '∞' }),
    barsLabel: (s) =>
      w.say('bars_label', {
        bars: s.bars.map((b) => w.say('bars_item', { listener: b.listener, count: b.count })).join(w.say('bars_sep')),
        expected: s.expected.toFixed(1),
      }),
    listenerAxis: w.say('listener_axis'),
    countsTable: w.say('counts_table'),
    listener: w.say('listener'),
    count: w.say('count'),
    vsExpected: w.say('vs_expected'),
    events: w.say('events'),
    seq: w.say('seq'),
    tuple: w.say('tuple'),
    cpu: w.say('cpu'),
    kernelPick: w.say('kernel_pick'),
    modelPick: w.say('model_pick'),
    agrees: w.say('agrees'),
    needsKey: w.say('needs_key'),
    noSocket: w.say('no_socket'),
    yes: w.say('yes'),
    no: w.say('no'),
    explain: w.say('explain'),
    explainRow: (seq) => w.say('explain_row', { seq }),
    onlyMismatches: w.say('only_mismatches'),
    prev: w.say('prev'),
    next: w.say('next'),
    page: (from, to, total) => w.say('page', { from: num(from), to: num(to), total: num(total) }),
    open: w.say('open'),
    none: w.say('none'),
    benchTitle: w.say('bench_title'),
    benchSetup: (workers, clients, n, accept, cpus) => w.say('bench_setup', { workers, clients, n: num(n), accept, cpus }),
    benchCols: w.list('bench_cols', 6),
    benchPerWorker: w.say('bench_per_worker'),
    benchWorkerAxis: w.say('bench_worker_axis'),
  };
}

/** The words for the page's language. */
export function traceText(lang = document.documentElement.lang): TraceText {
  return build(langOf(lang));
}

/** Both languages, for tests. */
export const TRACE_TEXT = { en: build('en'), zh: build('zh-CN') } as const;
