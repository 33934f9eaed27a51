/**
 * The "Your server" widget's interface words: the shape its code reads, said
 * in the page's language by the catalogue (`ui.server.*` of messages/en.json
 * and messages/zh-CN.json). No sentence is written here.
 */
import { langOf, words, type Lang } from '../model/messages';
import type { CountsDiagnosis, Reason, SsRead } from '../model/diagnose';
import type { ServerWords } from '../scene/server-view';
import type { ServerHeadings } from '../render/server';

export interface ServerText extends ServerWords {
  headings: ServerHeadings;
  input: string;
  inputHint: string;
  file: string;
  kernel: string;
  kernelHint: string;
  port: string;
  portHint: string;
  portBad: string;
  diagnose: string;
  search: string;
  stop: string;
  /** What was read from ss output. */
  readSockets: (r: SsRead) => string;
  readCounts: (n: number) => string;
  readReport: (kernel: string) => string;
  noOwners: string;
  badLines: (n: number, first: number) => string;
  searchOffer: (connections: number, labels: number, members: number) => string;
  searching: (percent: number, eta: number | undefined) => string;
  searched: (seconds: number, candidates: number) => string;
  stopped: string;
  reportKey: string;
  failed: (msg: string) => string;
  fileTooBig: (bytes: number) => string;
}

/** The chapters a verdict links to, by path under the site's root. */
const LINKS = [
  'hash/',
  'reloads/',
  'steering/',
  'accept-models/',
  'servers/',
  'diagnose/',
  'scenarios/six-connections/',
  'scenarios/long-lived-favourite/',
  'scenarios/shared-queue-under-load/',
  'scenarios/stalled-worker/',
  'scenarios/few-clients/',
] as const;
const HEADINGS = ['verdict', 'evidence', 'readMore', 'sockets', 'workers', 'queues'] as const;

/** The "Your server" widget's words in a page language, from the catalogue (`ui.server.*` of messages/*.json). */
function build(lang: Lang): ServerText {
  const w = words(lang, 'server');
  const { num } = w;
  const sep = w.say('list_sep');
  return {
    headings: w.record('headings', HEADINGS),
    input: w.say('input'),
    inputHint: w.say('input_hint'),
    file: w.say('file'),
    kernel: w.say('kernel'),
    kernelHint: w.say('kernel_hint'),
    port: w.say('port'),
    portHint: w.say('port_hint'),
    portBad: w.say('port_bad'),
    diagnose: w.say('diagnose'),
    search: w.say('search'),
    stop: w.say('stop'),
    socketsCaption: w.say('sockets_caption'),
    socketsHead: w.list('sockets_head', 6),
    workersCaption: w.say('workers_caption'),
    workersHead: w.list('workers_head', 3),
    workersChart: w.say('workers_chart'),
    workersAxis: w.say('workers_axis'),
    queueChart: w.say('queue_chart'),
    queueNote: (id, peak) => w.say('queue_note', { id, peak: num(peak) }),
    // A worker's label and a slot are a name and numbers in every language.
    worker: (comm, pid) => (comm ? `${comm} ${pid}` : String(pid)),
    slot: (slot) => (slot === null ? '?' : String(slot)),
    unknown: w.say('unknown'),
    keyFound: (key, n, expected) => w.say('key_found', { key, n, expected: expected.toExponential(1) }),
    agreement: (agreed, n) => w.say('agreement', { agreed, n }),
    percentile: (p, boots) => w.say('percentile', { percent: num(p, 1), boots }),
    expectedEmpty: (e, n) => (e < 0.005 ? w.say('expected_empty.never', { n }) : w.say('expected_empty.some', { expected: num(e, 2), n })),
    band: (p5, p95, n, total) => w.say('band', { total: num(total), n, p5: num(p5), p95: num(p95) }),
    reason: (r: Reason) => {
      switch (r.kind) {
        case 'one-process':
          return w.say('reason.one-process', { pid: r.pid });
        case 'refused':
        case 'labels':
          return w.say(`reason.${r.kind}`, { why: r.why });
        case 'no-key-fits':
          return w.say('reason.no-key-fits', { connections: r.connections });
        case 'ambiguous':
          return w.say('reason.ambiguous', { candidates: r.candidates, more: r.moreNeeded !== null ? w.say('reason_more', { n: r.moreNeeded }) : '' });
        case 'several-groups':
          return w.say('reason.several-groups', { addresses: r.addresses.join(sep) });
        default:
          return w.say(`reason.${r.kind}`);
      }
    },
    oneSocket: (holders, accepted, n) => w.say('one_socket', { holders, accepted, n }),
    countsVerdict: (c: CountsDiagnosis) => {
      switch (c.verdict) {
        case 'few-clients':
          return w.say('counts_verdict.few-clients', { total: c.total, workers: c.workers, empty: num(c.expectedEmpty, 1) });
        case 'beyond-hash':
          return w.say('counts_verdict.beyond-hash', { share: num(c.observed.maxShare * 100, 1), total: num(c.total), p999: num(c.maxP999) });
        default:
          return w.say('counts_verdict.hash-spread', { total: num(c.total), workers: c.workers, p: num(c.pValue * 100, 1) });
      }
    },
    countsShape: (c) => w.say(`counts_shape.${c.shape}`),
    link: w.record('link', LINKS),
    readSockets: (r) =>
      w.say('read_sockets', {
        listeners: w.count('n_listening', r.snapshot.listeners.length),
        connections: w.count('n_connection', r.snapshot.connections.length),
        proto: r.snapshot.proto.toUpperCase(),
        port: r.snapshot.port,
        ports: r.listeningPorts.length > 1 ? w.say('read_sockets_ports', { ports: r.listeningPorts.join(sep) }) : '',
        duplicates: r.duplicates ? w.say('read_sockets_duplicates', { n: r.duplicates }) : '',
        other: r.other ? w.say('read_sockets_other', { n: r.other }) : '',
      }),
    readCounts: (n) => w.say('read_counts', { n }),
    readReport: (kernel) => w.say('read_report', { kernel: kernel ? w.say('read_report_kernel', { kernel }) : '' }),
    noOwners: w.say('no_owners'),
    badLines: (n, first) => w.count('bad_lines', n, { first }),
    searchOffer: (connections, workers, listeners) => w.say('search_offer', { connections, workers, listeners }),
    searching: (p, eta) => w.say('searching', { percent: num(p, 0), eta: eta !== undefined ? w.say('searching_eta', { seconds: Math.ceil(eta) }) : '' }),
    searched: (seconds, c) => w.say('searched', { seconds: num(seconds, 1), fit: w.count('searched_fit', c) }),
    stopped: w.say('stopped'),
    reportKey: w.say('report_key'),
    failed: (message) => w.say('failed', { message }),
    fileTooBig: (b) => w.say('file_too_big', { bytes: num(b) }),
  };
}

/** The words for a page language (`zh…` reads Chinese, anything else English). */
export function serverText(lang: string): ServerText {
  return build(langOf(lang));
}

/** Both languages, for tests. */
export const SERVER_TEXT = { en: build('en'), zh: build('zh-CN') } as const;
