/**
 * The paste analyser's interface words: the shape its code reads, said in
 * the page's language by the catalogue (`ui.paste.*` of messages/en.json and
 * messages/zh-CN.json). No sentence is written here.
 */
import { langOf, say, words, type Lang, type WidgetKey } from '../model/messages';
import { cardText, type ExplainCardText } from './explain-card';
import type { Recovered } from '../model/recover';
import type { Answered, BadLine, ReadSummary } from '../model/paste-protocol';
import type { Comparison, Spread } from '../model/paste';

type Decision = ReadSummary['decision'];
type Detected = NonNullable<ReadSummary['detected']>;

export interface PasteText {
  placeholder: string;
  text: string;
  textHint: string;
  file: string;
  fileChosen: (name: string, bytes: number) => string;
  pastedAsFile: (chars: number) => string;
  fileTooBig: (bytes: number, max: number) => string;
  format: string;
  formats: [string, string][];
  /** A line's fields and formats as a reason names them. */
  fieldWords: Record<string, string>;
  formatWords: Record<string, string>;
  bind: string;
  bindHint: string;
  bindPlaceholder: string;
  bindBad: (msg: string) => string;
  kernel: string;
  kernelHint: string;
  kernelBad: (msg: string) => string;
  /** The profile in use; `basis` is where its rules were read, already said in this language (`sayBasis`). */
  profile: (release: string, basis: string) => string;
  proto: string;
  listeners: string;
  /** `max`: the largest group (the model's `maxGroupMembers`). */
  listenersHint: (max: number) => string;
  listenersBad: (max: number) => string;
  closed: string;
  closedHint: string;
  closedBad: (n: number) => string;
  observedCounts: string;
  observedCountsHint: string;
  countsBad: (n: number) => string;
  secret: string;
  secretNone: string;
  secretTyped: string;
  secretRandom: string;
  secretRecovered: string;
  secretV4: string;
  secretV4Hint: string;
  secretV6: string;
  secretV6Hint: string;
  secretBad: string;
  innerBad: string;
  innerMissing: (n: number) => string;
  layoutTitle: string;
  layout: string;
  layoutHint: string;
  layoutExample: string;
  layoutBad: (msg: string) => string;
  layoutDescribe: (n: number) => string;
  socketsTitle: string;
  socketsLead: (sockets: number, unrouted: number, rows: number) => string;
  socketsCaption: string;
  socketsHead: string[];
  callOk: string;
  groupMember: (group: number, member: number) => string;
  analyse: string;
  cancel: string;
  progress: string;
  ready: string;
  nothing: string;
  notRun: string;
  working: (phase: string, done: number, total: number) => string;
  urlBad: (param: string, value: string) => string;
  readTitle: string;
  formatFound: string;
  formatName: (format: string, header: boolean) => string;
  formatNone: string;
  /** Why the format: the sample's lines it read, names where numbers belong, a second format. */
  formatWhy: (d: Detected) => string;
  linesRead: string;
  lineCounts: (s: ReadSummary, skipWord: (kind: string) => string) => string;
  serverSide: string;
  decision: (d: Decision, flipped: boolean) => string;
  /** Under the per-line decision: how many rows each basis decided. */
  sidesBy: (sides: Record<string, number>) => string;
  flip: string;
  columnsTitle: (header: boolean) => string;
  columnsHead: string[];
  columnRole: (name: string) => string;
  roles: [string, string][];
  listeningFound: string;
  partial: string;
  cut: (n: number) => string;
  badTitle: (n: number) => string;
  badColumns: string[];
  /** Rows read with a note (address translation, a dropped zone). */
  notesTitle: (n: number) => string;
  notesColumns: string[];
  /** Rows whose line shows another protocol than the group's; `why` is the model's refusal, said. */
  mismatched: (n: number, why: string) => string;
  readStatus: (s: ReadSummary) => string;
  answeredStatus: (s: ReadSummary, a: Answered, secret: string | null) => string;
  spreadTitle: string;
  spreadPending: string;
  spreadLead: (s: Spread) => string;
  maxMin: string;
  jain: string;
  emptyShare: string;
  maxShare: string;
  oneListener: string;
  bandLine: (b: { mean: number; p5: number; p95: number }) => string;
  unbounded: (share: number) => string;
  yours: string;
  notExchangeable: string;
  observedSkew: (c: Comparison) => string;
  byListenersTitle: string;
  byListenersHead: string[];
  barsTitle: string;
  barsTitleSockets: string;
  /** Why there are no bars; `spread` is the title of the section that gives any one listener's range over random boots, when it is on the page. */
  barsNeedSecret: (spread: string | null) => string;
  barsUnder: (secret: string) => string;
  barsObserved: string;
  barsTyped: string;
  barsLabel: (counts: number[], band?: { p5: number; p95: number; mean: number }) => string;
  listenerAxis: string;
  socketAxis: string;
  barsSockets: (secret: string) => string;
  rowColumnsSockets: string[];
  countsTable: string;
  countsHead: string[];
  below: string;
  above: string;
  within: string;
  typedLabel: (v: string) => string;
  randomBootLabel: (v: string) => string;
  recoveredLabel: (v: string) => string;
  rowsTitle: string;
  noRows: string;
  rowsNeedSecret: string;
  search: string;
  searchPlaceholder: string;
  filterListener: string;
  filterListenerHint: string;
  shown: (n: number, of: number) => string;
  rowColumns: string[];
  none: string;
  explain: string;
  explainRow: (line: string) => string;
  explainNeedsSecret: string;
  explainTitle: (line: number, secret: string) => string;
  recoverTitle: string;
  recoverLead: (n: number) => string;
  recoverNeeds: string;
  recoverGo: string;
  recoverProgress: (share: number, eta: number | undefined) => string;
  recoverFailed: (msg: string) => string;
  recovered: (r: Recovered) => string;
  useRecovered: (v: string) => string;
  exportTitle: string;
  exportCsv: string;
  exportJson: string;
  share: string;
  copied: string;
  linkInAddressBar: string;
  tooBigForUrl: (max: number) => string;
  card: ExplainCardText;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;

/** The formats a paste can be read as, in the order the form offers them. */
const FORMAT_IDS = ['auto', 'ss', 'netstat', 'conntrack', 'tcpdump', 'proc-net', 'csv', 'pairs', 'observed', 'page', 'trace'] as const;
/** A line's fields, as a reason names them. */
const FIELD_IDS = [
  'localAddress',
  'localPort',
  'peerAddress',
  'peerPort',
  'sourceAddress',
  'sourcePort',
  'destinationAddress',
  'destinationPort',
  'listener',
  'proto',
  'state',
] as const;
/** The formats as a reason names them. */
const FORMAT_WORD_IDS = ['ss', 'netstat', 'conntrack', 'tcpdump', 'proc-net', 'csv', 'pairs', 'observed', 'page', 'bsd'] as const;
/** What a column can hold. */
const ROLE_IDS = [
  'ignore',
  'endpoint:client',
  'address:client',
  'port:client',
  'endpoint:server',
  'address:server',
  'port:server',
  'endpoint:local',
  'address:local',
  'port:local',
  'endpoint:peer',
  'address:peer',
  'port:peer',
  'endpoint:first',
  'address:first',
  'port:first',
  'endpoint:second',
  'address:second',
  'port:second',
  'listener',
  'proto',
] as const;
/** What decided the server side, for the whole paste. */
const DECISIONS = new Set(['bind', 'listening', 'commonPort', 'format', 'perLine']);
/** What decided a row's server side under the per-line decision. */
const SIDES = new Set(['listening', 'format', 'systemPort', 'servicePort']);

/** The paste analyser's words in a page language, from the catalogue (`ui.paste.*` of messages/*.json). */
function build(lang: Lang): PasteText {
  const w = words(lang, 'paste');
  const { num } = w;
  const labels = w.record('formats', FORMAT_IDS);
  const formats: [string, string][] = FORMAT_IDS.map((id) => [id, labels[id]]);
  const formatWords: Record<string, string> = w.record('format_words', FORMAT_WORD_IDS);
  const roleLabels = w.record('roles', ROLE_IDS);
  const sep = w.say('list_sep');
  return {
    placeholder: w.say('placeholder'),
    text: w.say('text'),
    textHint: w.say('text_hint'),
    file: w.say('file'),
    fileChosen: (name, b) => w.say('file_chosen', { name, size: mb(b) }),
    pastedAsFile: (c) => w.say('pasted_as_file', { chars: num(c) }),
    fileTooBig: (b, max) => w.say('file_too_big', { size: mb(b), max: mb(max) }),
    format: w.say('format'),
    formats,
    fieldWords: w.record('field_words', FIELD_IDS),
    formatWords,
    bind: w.say('bind'),
    bindHint: w.say('bind_hint'),
    bindPlaceholder: w.say('bind_placeholder'),
    bindBad: (message) => w.say('bind_bad', { message }),
    kernel: w.say('kernel'),
    kernelHint: w.say('kernel_hint'),
    kernelBad: (message) => w.say('kernel_bad', { message }),
    profile: (release, basis) => w.say('profile', { release, basis }),
    proto: w.say('proto'),
    listeners: w.say('listeners'),
    listenersHint: (max) => w.say('listeners_hint', { max }),
    listenersBad: (max) => w.say('listeners_bad', { max }),
    closed: w.say('closed'),
    closedHint: w.say('closed_hint'),
    closedBad: (k) => w.say('closed_bad', { n: k }),
    observedCounts: w.say('observed_counts'),
    observedCountsHint: w.say('observed_counts_hint'),
    countsBad: (k) => w.say('counts_bad', { n: num(k) }),
    secret: w.say('secret'),
    secretNone: w.say('secret_none'),
    secretTyped: w.say('secret_typed'),
    secretRandom: w.say('secret_random'),
    secretRecovered: w.say('secret_recovered'),
    secretV4: w.say('secret_v4'),
    secretV4Hint: w.say('secret_v4_hint'),
    secretV6: w.say('secret_v6'),
    secretV6Hint: w.say('secret_v6_hint'),
    secretBad: w.say('secret_bad'),
    innerBad: w.say('inner_bad'),
    innerMissing: (k) => w.count('inner_missing', k),
    layoutTitle: w.say('layout_title'),
    layout: w.say('layout'),
    layoutHint: w.say('layout_hint'),
    layoutExample: w.say('layout_example'),
    layoutBad: (message) => w.say('layout_bad', { message }),
    layoutDescribe: (k) => w.say('layout_describe', { sockets: w.count('n_socket', k) }),
    socketsTitle: w.say('sockets_title'),
    socketsLead: (k, u, rows) =>
      w.say('sockets_lead', {
        sockets: w.count('n_socket', k),
        reached: num(rows - u),
        connections: w.count('n_connection', rows),
        none: u ? w.say('sockets_lead_none', { n: num(u) }) : '',
      }),
    socketsCaption: w.say('sockets_caption'),
    socketsHead: w.list('sockets_head', 6),
    callOk: w.say('call_ok'),
    groupMember: (group, member) => w.say('group_member', { group, member }),
    analyse: w.say('analyse'),
    cancel: w.say('cancel'),
    progress: w.say('progress'),
    ready: w.say('ready'),
    nothing: w.say('nothing'),
    notRun: w.say('not_run'),
    working: (phase, done, total) =>
      phase === 'read'
        ? w.say('working.read', { share: pct(total ? done / total : 0) })
        : w.say(phase === 'spread' ? 'working.spread' : 'working.answer', { done: num(done), total: num(total) }),
    urlBad: (param, value) => w.say('url_bad', { param, value }),
    readTitle: w.say('read_title'),
    formatFound: w.say('format_found'),
    formatName: (f, header) => {
      const name = formats.find(([k]) => k === f)?.[1] ?? f;
      return header ? w.say('format_with_header', { format: name }) : name;
    },
    formatWhy: (d) => {
      const e = d.evidence;
      return w.say('format_why', {
        read: num(e.read),
        sample: num(e.sample),
        format: formatWords[d.format] ?? d.format,
        sockets: num(e.sockets),
        names: e.names ? w.say('format_why_names', { n: num(e.names) }) : '',
        mixed: e.mixed ? w.say('format_why_mixed', { n: num(e.mixed.lines), format: formatWords[e.mixed.format] ?? e.mixed.format }) : '',
      });
    },
    formatNone: w.say('format_none'),
    linesRead: w.say('lines_read'),
    lineCounts: (s, skipWord) =>
      w.say('line_counts', {
        lines: num(s.lines),
        rows: num(s.rows),
        duplicates: num(s.duplicates),
        skipped: num(Object.values(s.skipped).reduce((a, b) => a + b, 0)),
        why:
          Object.entries(s.skipped)
            .map(([kind, v]) => w.say('skip_item', { kind: skipWord(kind), n: num(v) }))
            .join(sep) || w.say('none'),
        listening: w.count('n_listening', s.listening),
        unusable: num(s.bad + s.undecided),
      }),
    serverSide: w.say('server_side'),
    decision: (d, flipped) => {
      const decision = w.say(`decision.${DECISIONS.has(d.basis) ? d.basis : 'none'}` as WidgetKey<'paste'>, { port: d.port ?? '' });
      return w.say(flipped ? 'decision_flipped' : 'decision_said', { decision });
    },
    sidesBy: (sides) =>
      w.say('sides_by', {
        sides: Object.entries(sides)
          .map(([k, v]) => w.say('side_item', { side: SIDES.has(k) ? w.say(`side.${k}` as WidgetKey<'paste'>) : k, n: num(v) }))
          .join(w.say('side_sep')),
      }),
    flip: w.say('flip'),
    columnsTitle: (header) => w.say(header ? 'columns_title.header' : 'columns_title.values'),
    columnsHead: w.list('columns_head', 2),
    columnRole: (column) => w.say('column_role', { column }),
    roles: ROLE_IDS.map((id) => [id, roleLabels[id]]),
    listeningFound: w.say('listening_found'),
    partial: w.say('partial'),
    cut: (k) => w.count('cut', k),
    badTitle: (k) => w.say('bad_title', { n: num(k) }),
    badColumns: w.list('bad_columns', 4),
    notesTitle: (k) => w.say('notes_title', { n: num(k) }),
    notesColumns: w.list('notes_columns', 2),
    mismatched: (k, why) => w.count('mismatched', k, { why }),
    readStatus: (s) => w.say('read_status', { lines: w.count('n_line', s.lines), connections: w.count('n_connection', s.rows) }),
    answeredStatus: (s, a, secret) =>
      w.say('answered_status', {
        connections: w.count('n_connection', s.rows),
        listeners: w.count('n_listener', a.listeners),
        secret: secret ? w.say('answered_under', { secret }) : w.say('answered_no_secret'),
        unrouted: a.unrouted ? w.say('answered_unrouted', { n: num(a.unrouted) }) : '',
        disagree: a.observed && a.counts ? w.say('answered_disagree', { n: num(a.disagree) }) : '',
      }),
    spreadTitle: w.say('spread_title'),
    spreadPending: w.say('spread_pending'),
    spreadLead: (s) =>
      w.say('spread_lead', {
        boots: num(s.boots),
        which: s.unrouted
          ? w.say('spread_which_reach', { reach: num(s.tuples - s.unrouted), tuples: num(s.tuples) })
          : w.say('spread_which_all', { tuples: num(s.tuples) }),
        listeners: num(s.listeners),
      }),
    maxMin: w.say('max_min'),
    jain: w.say('jain'),
    emptyShare: w.say('empty_share'),
    maxShare: w.say('max_share'),
    oneListener: w.say('one_listener'),
    bandLine: (b) => w.say('band_line', { mean: b.mean < 10 ? b.mean.toFixed(2) : num(Math.round(b.mean)), p5: num(b.p5), p95: num(b.p95) }),
    unbounded: (x) => w.say('unbounded', { share: pct(x) }),
    yours: w.say('yours'),
    notExchangeable: w.say('not_exchangeable'),
    observedSkew: (c) =>
      w.say('observed_skew', {
        maxMin: c.observed.maxMin === null ? w.say('observed_infinite') : c.observed.maxMin.toFixed(2),
        jain: c.observed.jain.toFixed(3),
        percentile: c.maxMinPercentile.toFixed(0),
      }),
    byListenersTitle: w.say('by_listeners_title'),
    byListenersHead: w.list('by_listeners_head', 3),
    barsTitle: w.say('bars_title'),
    barsTitleSockets: w.say('bars_title_sockets'),
    barsNeedSecret: (spread) => w.say('bars_need_secret', { pointer: spread ? w.say('bars_need_secret_pointer', { spread }) : '' }),
    barsUnder: (secret) => w.say('bars_under', { secret }),
    barsObserved: w.say('bars_observed'),
    barsTyped: w.say('bars_typed'),
    barsLabel: (c, b) =>
      w.say('bars_label', {
        listeners: w.count('n_listener', c.length),
        min: num(Math.min(...c)),
        max: num(Math.max(...c)),
        band: b ? w.say('bars_label_band', { p5: num(Math.round(b.p5)), p95: num(Math.round(b.p95)) }) : '',
      }),
    listenerAxis: w.say('listener_axis'),
    socketAxis: w.say('socket_axis'),
    barsSockets: (secret) => w.say('bars_sockets', { secret }),
    rowColumnsSockets: w.list('row_columns_sockets', 5),
    countsTable: w.say('counts_table'),
    countsHead: w.list('counts_head', 3),
    below: w.say('below'),
    above: w.say('above'),
    within: w.say('within'),
    typedLabel: (value) => w.say('typed_label', { value }),
    randomBootLabel: (value) => w.say('random_boot_label', { value }),
    recoveredLabel: (value) => w.say('recovered_label', { value }),
    rowsTitle: w.say('rows_title'),
    noRows: w.say('no_rows'),
    rowsNeedSecret: w.say('rows_need_secret'),
    search: w.say('search'),
    searchPlaceholder: w.say('search_placeholder'),
    filterListener: w.say('filter_listener'),
    filterListenerHint: w.say('filter_listener_hint'),
    shown: (k, of) => w.say('shown', { n: num(k), of: num(of) }),
    rowColumns: w.list('row_columns', 5),
    none: w.say('none'),
    explain: w.say('explain'),
    explainRow: (line) => w.say('explain_row', { line }),
    explainNeedsSecret: w.say('explain_needs_secret'),
    explainTitle: (line, secret) => w.say('explain_title', { line, secret }),
    recoverTitle: w.say('recover_title'),
    recoverLead: (k) => w.count('recover_lead', k),
    recoverNeeds: w.say('recover_needs'),
    recoverGo: w.say('recover_go'),
    recoverProgress: (share, eta) =>
      w.say('recover_progress', { share: pct(share), eta: eta !== undefined ? w.say('recover_eta', { seconds: Math.ceil(eta) }) : '' }),
    recoverFailed: (message) => w.say('recover_failed', { message }),
    recovered: (r) =>
      w.say('recovered', {
        searched: r.complete ? w.say('recovered_all') : w.say('recovered_stopped', { share: pct((r.keysPerSecond * r.seconds) / 2 ** 32) }),
        seconds: r.seconds.toFixed(1),
        workers: w.count('n_worker', r.workers),
        rate: (r.keysPerSecond / 1e9).toFixed(2),
        isa: r.plan.isa,
        keys: w.count('n_key', r.candidates),
        chance:
          r.plan.expectedFalseMatches < 0.01 ? w.say('recovered_unique') : w.say('recovered_chance', { expected: r.plan.expectedFalseMatches.toPrecision(3) }),
        more: r.plan.moreNeeded ? w.say('recovered_more', { observations: w.count('n_more_observation', r.plan.moreNeeded) }) : '',
        leftOut: r.leftOut ? w.say('recovered_left_out', { n: num(r.leftOut) }) : '',
      }),
    useRecovered: (value) => w.say('use_recovered', { value }),
    exportTitle: w.say('export_title'),
    exportCsv: w.say('export_csv'),
    exportJson: w.say('export_json'),
    share: w.say('share'),
    copied: w.say('copied'),
    linkInAddressBar: w.say('link_in_address_bar'),
    tooBigForUrl: (max) => w.say('too_big_for_url', { max: num(max) }),
    card: cardText(lang),
  };
}

/** The words for a page language. */
export function pasteText(lang: string): PasteText {
  return build(langOf(lang));
}

/** Both languages, for tests. */
export const PASTE_TEXT = { en: build('en'), zh: build('zh-CN') } as const;

/** A line's problem in `lang`: the model's reason, with its field and format in the page's words. */
export function sayReason(lang: Lang, t: PasteText, b: BadLine): string {
  const r = b.reason as Record<string, unknown>;
  const given: Record<string, string> = {};
  if (typeof r.field === 'string') given.field = t.fieldWords[r.field] ?? r.field;
  if (typeof r.format === 'string') given.format = t.formatWords[r.format] ?? r.format;
  return b.group === 'undecided' ? say(lang, 'undecided', b.reason as never, given) : say(lang, 'line_error', b.reason as never, given);
}
