/**
 * What the "Your server" widget shows, from the model's diagnosis: the
 * sockets and who holds them, per-worker counts against the band hashing
 * gives one worker, the accept queues over time when a report has samples,
 * and the verdict with its evidence and where to read more. Pure data with
 * the words filled in (the verdict from the sentence tables, the rest from
 * the widget's {@link ServerWords}); no DOM, and no arithmetic of the
 * kernel's: every figure is the model's.
 */
import type { CountsDiagnosis, Diagnosis, Reason, Snapshot, VerdictKind } from '../model/diagnose';
import { say, type Lang } from '../model/messages';

/** The widget's words the scene needs, in one language (the catalogue's ui.server.*, shaped by src/islands/server-text.ts). */
export interface ServerWords {
  socketsCaption: string;
  socketsHead: readonly string[];
  workersCaption: string;
  workersHead: readonly string[];
  workersChart: string;
  workersAxis: string;
  queueChart: string;
  /** The coloured line of the queue chart: the listener with the deepest queue. */
  queueNote: (id: string, peak: number) => string;
  /** A worker's label: its command name and pid. */
  worker: (comm: string, pid: number) => string;
  /** Slot of `socks[]`, or unknown. */
  slot: (slot: number | null) => string;
  unknown: string;
  keyFound: (initval: string, connections: number, expected: number) => string;
  agreement: (agree: number, of: number) => string;
  percentile: (percentile: number, boots: number) => string;
  expectedEmpty: (empty: number, workers: number) => string;
  band: (p5: number, p95: number, workers: number, total: number) => string;
  reason: (r: Reason) => string;
  /** One socket on the port: how many processes hold it, how many accepted connections, and how many connections. */
  oneSocket: (holders: number, accepted: number, connections: number) => string;
  /** The counts' verdict sentence, with the figures the model gave. */
  countsVerdict: (c: CountsDiagnosis) => string;
  countsShape: (c: CountsDiagnosis) => string;
  link: Record<string, string>;
}

/** A link to the page that explains a verdict: a path under the site's root in the page's language, and what it says. */
export interface VerdictLink {
  path: string;
  label: string;
}

export interface VerdictView {
  kind: VerdictKind;
  sentence: string;
  evidence: string[];
  links: VerdictLink[];
}

/** A table of text: caption, heads, rows. */
export interface TableView {
  caption: string;
  head: readonly string[];
  rows: string[][];
}

export interface WorkersView {
  counts: number[];
  labels: string[];
  /** What hashing gives one worker (the model's draws): 5th and 95th percentiles and the mean. */
  band: { p5: number; mean: number; p95: number } | null;
  chartLabel: string;
  axis: string;
  table: TableView;
}

export interface QueueView {
  label: string;
  /** Which line is drawn in colour: the listener with the deepest queue, and its peak. */
  note: string;
  /** Per listener, the queue at each sample. */
  series: { id: string; queue: number[] }[];
  /** Milliseconds between samples (the first interval). */
  stepMs: number;
}

export interface ServerView {
  verdict: VerdictView;
  sockets: TableView | null;
  workers: WorkersView | null;
  queues: QueueView | null;
}

/** Where each verdict is explained: the chapter, and the scenario that shows it. */
const LINKS: Record<VerdictKind, readonly string[]> = {
  'hash-spread': ['hash/', 'scenarios/six-connections/'],
  'beyond-hash': ['reloads/', 'steering/', 'scenarios/long-lived-favourite/'],
  'shared-listener': ['accept-models/', 'scenarios/shared-queue-under-load/'],
  'stalled-listener': ['scenarios/stalled-worker/', 'accept-models/'],
  'few-clients': ['scenarios/few-clients/', 'hash/'],
  'single-listener': ['servers/'],
  'no-listener': [],
  undecided: [],
};

/** Where a shape of counts beyond hashing is explained (the accept model that makes it). */
const SHAPE_LINKS: Record<CountsDiagnosis['shape'], readonly string[] | null> = {
  even: null,
  'one-dominant': ['accept-models/', 'scenarios/shared-queue-under-load/'],
  'idle-workers': ['scenarios/stalled-worker/', 'accept-models/'],
  uneven: null,
};

function links(kind: VerdictKind, w: ServerWords, first: readonly string[] = LINKS[kind]): VerdictLink[] {
  const paths = [...first, `diagnose/#${kind}`];
  return paths.map((path) => ({ path, label: w.link[path.replace(/#.*$/, '')] ?? path }));
}

/** The verdict in words: the sentence table's template for its kind, with the pids and listeners it names (as the model's `Verdict::message`). */
export function verdictSentence(lang: Lang, d: Diagnosis): string {
  const v = d.verdict;
  const pids = v.pids.join(', ');
  switch (v.kind) {
    case 'hash-spread':
    case 'beyond-hash':
    case 'shared-listener':
      return say(lang, 'diagnosis_verdict', { kind: v.kind, pids });
    case 'stalled-listener':
      return say(lang, 'diagnosis_verdict', { kind: v.kind, pids, listeners: v.listeners.join(', ') });
    default:
      return say(lang, 'diagnosis_verdict', { kind: v.kind });
  }
}

/** The evidence under a snapshot's verdict. */
function evidence(d: Diagnosis, band: CountsDiagnosis | null, w: ServerWords): string[] {
  const out: string[] = [];
  const k = d.verdict.kind;
  if (k === 'shared-listener' || k === 'single-listener') {
    // Not a group: no key to speak of; what counts is who holds the one socket and who accepted.
    const l = d.listeners.find((x) => d.verdict.listeners.includes(x.id));
    out.push(w.oneSocket(l?.owners.length ?? 0, d.workers.length, d.connections.length));
    return out;
  }
  if (d.verdict.reason) out.push(w.reason(d.verdict.reason));
  if (d.key) out.push(w.keyFound(d.key.initval, d.key.connections, d.key.expectedFalseMatches));
  else if (d.keyReason && d.keyReason.kind !== d.verdict.reason?.kind) out.push(w.reason(d.keyReason));
  if (d.agreement) out.push(w.agreement(d.agreement[0], d.agreement[1]));
  if (d.spread) {
    out.push(w.percentile(d.spread.percentile, d.spread.boots));
    out.push(w.expectedEmpty(d.spread.expectedEmpty, d.listeners.length));
  }
  if (band) out.push(w.band(band.band.p5, band.band.p95, band.workers, band.total));
  return out;
}

/**
 * The scene of a diagnosed snapshot. `band` is the model's judgement of the
 * per-worker counts alone (`diagnoseCounts` over the group's listeners),
 * for the band drawn behind the bars.
 */
export function snapshotView(lang: Lang, w: ServerWords, d: Diagnosis, snapshot: Snapshot, band: CountsDiagnosis | null): ServerView {
  const sockets: TableView = {
    caption: w.socketsCaption,
    head: w.socketsHead,
    rows: d.listeners.map((l) => [
      l.id,
      l.local,
      l.owners.map((o) => w.worker(o.comm, o.pid)).join(', ') || w.unknown,
      l.accepting ? l.accepting.join(', ') : w.unknown,
      `${l.queue} / ${l.backlog}`,
      w.slot(l.slot),
    ]),
  };
  const workers: WorkersView | null = d.workers.length
    ? {
        counts: [...d.workers.map((x) => x.connections), ...idle(d)],
        labels: [...d.workers.map((x) => String(x.pid)), ...idle(d).map(() => '–')],
        band: band ? band.band : null,
        chartLabel: w.workersChart,
        axis: w.workersAxis,
        table: {
          caption: w.workersCaption,
          head: w.workersHead,
          rows: d.workers.map((x) => [w.worker(x.comm, x.pid), x.connections.toLocaleString(lang), w.slot(x.slot)]),
        },
      }
    : null;
  return {
    verdict: { kind: d.verdict.kind, sentence: verdictSentence(lang, d), evidence: evidence(d, band, w), links: links(d.verdict.kind, w) },
    sockets: d.listeners.length ? sockets : null,
    workers,
    queues: queueView(snapshot, w),
  };
}

/** Listeners of the group with no worker seen: zero bars, so the chart has one bar per listener. */
function idle(d: Diagnosis): number[] {
  const members = d.group ? d.listeners.filter((l) => l.local === d.group).length : 0;
  return new Array<number>(Math.max(0, members - d.workers.length)).fill(0);
}

/** The queues over time, when the snapshot has two samples or more. */
function queueView(s: Snapshot, w: ServerWords): QueueView | null {
  if (s.samples.length < 2 || s.listeners.length === 0) return null;
  const ids = s.listeners.map((l) => l.id);
  const series = ids.map((id) => ({ id, queue: s.samples.map((x) => x.listeners.find((l) => l.id === id)?.queue ?? Number.NaN) }));
  const peak = (q: number[]) => q.reduce((a, v) => (Number.isFinite(v) ? Math.max(a, v) : a), 0);
  // The chart colours the first line with the largest peak; the note names it.
  const hot = series.reduce((a, x) => (peak(x.queue) > peak(a.queue) ? x : a), series[0]!);
  return {
    label: w.queueChart,
    note: w.queueNote(hot.id, peak(hot.queue)),
    series,
    stepMs: Math.max(1, s.samples[1]!.tMs - s.samples[0]!.tMs),
  };
}

/** The scene of per-worker counts alone. */
export function countsView(lang: Lang, w: ServerWords, c: CountsDiagnosis, counts: number[], labels: string[]): ServerView {
  const padded = [...counts, ...new Array<number>(Math.max(0, c.workers - counts.length)).fill(0)];
  const names = padded.map((_, i) => labels[i] || String(i + 1));
  return {
    verdict: {
      kind: c.verdict,
      sentence: w.countsVerdict(c),
      evidence: [w.countsShape(c), w.band(c.band.p5, c.band.p95, c.workers, c.total), w.expectedEmpty(c.expectedEmpty, c.workers)],
      links: links(c.verdict, w, (c.verdict === 'beyond-hash' && SHAPE_LINKS[c.shape]) || LINKS[c.verdict]),
    },
    sockets: null,
    workers: {
      counts: padded,
      labels: names,
      band: c.band,
      chartLabel: w.workersChart,
      axis: w.workersAxis,
      table: { caption: w.workersCaption, head: w.workersHead, rows: padded.map((n, i) => [names[i]!, n.toLocaleString(lang), w.unknown]) },
    },
    queues: null,
  };
}
