/** The paste analyser's interface words, once per language. */
import { langOf } from '../model/messages';
import type { ExplainCardText } from '../render/explain-card';
import type { Recovered } from '../model/recover';
import type { Answered, ReadSummary } from '../model/paste-protocol';
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

const n = (x: number) => x.toLocaleString('en-US');
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
const plural = (k: number, one: string, many = `${one}s`) => `${n(k)} ${k === 1 ? one : many}`;

const FORMATS_EN: [string, string][] = [
  ['auto', 'Detect'],
  ['ss', 'ss -tn (also -tan, -tnp, -tne)'],
  ['netstat', 'netstat -tn / -tun'],
  ['conntrack', 'conntrack -L'],
  ['tcpdump', 'tcpdump (one line per packet)'],
  ['proc-net', '/proc/net/tcp, /proc/net/tcp6'],
  ['csv', 'CSV or TSV'],
  ['pairs', 'a:port b:port, or a port b port'],
  ['observed', '… plus the listener that received it'],
  ['page', 'this page’s own export'],
  ['trace', 'reuseport-agent trace (JSON)'],
];

/** What decided a row's server side under the per-line decision. */
const SIDE_EN: Record<string, string> = {
  listening: 'by a listening port in the paste',
  format: 'by the line’s own direction',
  systemPort: 'by a system port (below 1024) against a higher one',
  servicePort: 'by a well-known service port against an ephemeral one',
};
const SIDE_ZH: Record<string, string> = {
  listening: '依据粘贴内容中的监听端口',
  format: '依据该行自身的方向',
  systemPort: '依据系统端口（小于 1024）对较高端口',
  servicePort: '依据知名服务端口对临时端口',
};

const en: PasteText = {
  placeholder: 'State  Recv-Q Send-Q Local Address:Port  Peer Address:Port\nESTAB  0      0      10.0.0.1:8080       10.0.0.7:51234\n…',
  text: 'Connections',
  textHint: 'Paste the output of ss, netstat, conntrack, tcpdump, /proc/net/tcp, a CSV, or one connection per line. Drop a file here, or choose one.',
  file: 'Or a file: ',
  fileChosen: (name, b) => `Reading ${name} (${mb(b)}) instead of the text box.`,
  pastedAsFile: (c) => `The paste (${n(c)} characters) is too large for the text box; it will be read as a file.`,
  fileTooBig: (b, max) => `The file is ${mb(b)}; at most ${mb(max)} is read. Split it, or use reuseport-agent predict, which streams.`,
  format: 'Format',
  formats: FORMATS_EN,
  fieldWords: {
    localAddress: 'local address',
    localPort: 'local port',
    peerAddress: 'peer address',
    peerPort: 'peer port',
    sourceAddress: 'source address',
    sourcePort: 'source port',
    destinationAddress: 'destination address',
    destinationPort: 'destination port',
    listener: 'listener',
    proto: 'protocol',
    state: 'state',
  },
  formatWords: {
    ss: 'ss output',
    netstat: 'netstat output',
    conntrack: 'conntrack -L output',
    tcpdump: 'tcpdump output',
    'proc-net': '/proc/net/tcp',
    csv: 'the CSV',
    pairs: 'the address-pair format',
    observed: 'the address-pair-and-listener format',
    page: "this page's export format",
    bsd: 'FreeBSD or macOS output',
  },
  bind: 'Listening on',
  bindHint: 'ADDR:PORT or :PORT of your listening sockets; decides which side of each line is the server',
  bindPlaceholder: 'e.g. 0.0.0.0:8080 (optional)',
  bindBad: (m) => `Listening on: ${m}`,
  kernel: 'Kernel',
  kernelHint: 'a profile, or your uname -r',
  kernelBad: (m) => `Kernel: ${m}`,
  profile: (r, b) => `Uses profile ${r} (rules from ${b}).`,
  proto: 'Protocol',
  listeners: 'Listeners in the group',
  listenersHint: (max) => `1 to ${max}, numbered in listen() order (bind() for UDP)`,
  listenersBad: (max) => `Listeners in the group: give a whole number from 1 to ${max}.`,
  closed: 'Closed listeners',
  closedHint: 'closed in this order after all listened, e.g. 1,3',
  closedBad: (k) => `Closed listeners: give listener numbers below ${k}, separated by commas, such as 1,3.`,
  observedCounts: 'Connections per worker you saw (optional)',
  observedCountsHint: 'one count per listener, in listener order, to compare with what hashing alone gives',
  countsBad: (k) => `Connections per worker: give ${n(k)} whole numbers (one per listener), separated by commas or spaces.`,
  secret: 'Secret (the per-boot hash key)',
  secretNone: 'None: show what holds for every secret',
  secretTyped: 'Mine, typed below',
  secretRandom: 'A random boot (an example, not your server)',
  secretRecovered: 'Recovered from observed listeners',
  secretV4: 'IPv4 key',
  secretV4Hint: 'secret + net_hash_mix, 32-bit hex',
  secretV6: 'IPv6 inner key',
  secretV6Hint: 'needed for IPv6 lines; 32-bit hex',
  secretBad: 'IPv4 key: give a 32-bit hex value such as 0x1a2b3c4d.',
  innerBad: 'IPv6 inner key: give a 32-bit hex value such as 0x1a2b3c4d, or leave it empty.',
  innerMissing: (k) => `IPv6 inner key: ${plural(k, 'IPv6 connection')} need it as well as the IPv4 key; give your kernel’s value, or choose a random boot.`,
  layoutTitle: 'Several sockets (a layout)',
  layout: 'Socket layout (JSON)',
  layoutHint: 'the sockets in bind order, as reuseport-agent predict --layout reads them; when given, each connection gets the full listener lookup over them',
  layoutExample: 'Insert an example',
  layoutBad: (m) => `Socket layout: ${m}.`,
  layoutDescribe: (k) => `Your layout of ${plural(k, 'socket')}.`,
  socketsTitle: 'Your sockets',
  socketsLead: (k, u, rows) =>
    `The full listener lookup over ${plural(k, 'socket')}: ${n(rows - u)} of ${plural(rows, 'connection')} reach one of ` +
    `them${u ? `, ${n(u)} reach none` : ''}.`,
  socketsCaption: 'Each socket’s calls and what it receives',
  socketsHead: ['socket', 'address', 'bind()', 'listen()', 'reuseport group', 'connections'],
  callOk: 'succeeds',
  groupMember: (g, m) => `group ${g}, member ${m}`,
  analyse: 'Analyse',
  cancel: 'Stop',
  progress: 'Progress',
  ready: 'Paste connections or choose a file, then Analyse.',
  nothing: 'Connections: the box is empty. Paste some lines or choose a file.',
  notRun: 'Nothing was analysed: see the problems listed.',
  working: (phase, d, total) =>
    phase === 'read'
      ? `Reading: ${pct(total ? d / total : 0)}…`
      : phase === 'spread'
        ? `Simulating boots: ${n(d)} of ${n(total)}…`
        : `Answering: ${n(d)} of ${n(total)}…`,
  urlBad: (p, v) => `URL parameter ${p}=${v} is not valid here and was ignored.`,
  readTitle: 'What was read',
  formatFound: 'Format',
  formatName: (f, h) => `${FORMATS_EN.find(([k]) => k === f)?.[1] ?? f}${h ? ', with a header' : ''}`,
  formatWhy: (d) => {
    const e = d.evidence;
    return (
      `${n(e.read)} of the first ${n(e.sample)} lines read as ${en.formatWords[d.format] ?? d.format}, ${n(e.sockets)} of them sockets` +
      (e.names ? `; ${n(e.names)} print names where numbers belong: run the command again with -n (tcpdump: -nn)` : '') +
      (e.mixed ? `; ${n(e.mixed.lines)} are ${en.formatWords[e.mixed.format] ?? e.mixed.format}: the paste mixes formats, only one is read` : '') +
      '.'
    );
  },
  formatNone: 'not recognised',
  linesRead: 'Lines',
  lineCounts: (s, w) =>
    `${n(s.lines)} read: ${n(s.rows)} connections answered, ${n(s.duplicates)} duplicates, ${n(Object.values(s.skipped).reduce((a, b) => a + b, 0))} skipped (${
      Object.entries(s.skipped)
        .map(([k, v]) => `${w(k)} ${n(v)}`)
        .join(', ') || 'none'
    }), ${n(s.listening)} listening socket${s.listening === 1 ? '' : 's'}, ${n(s.bad + s.undecided)} unusable.`,
  serverSide: 'Server side',
  decision: (d, flipped) => {
    const base =
      d.basis === 'bind'
        ? `port ${d.port}, as you gave under “Listening on”`
        : d.basis === 'listening'
          ? `port ${d.port}, where the paste shows listening sockets`
          : d.basis === 'commonPort'
            ? `port ${d.port}, common to every line`
            : d.basis === 'format'
              ? 'as the format says (first field the client)'
              : d.basis === 'perLine'
                ? 'line by line: a listening port in the paste, the line’s own direction, or a system or well-known port against an ephemeral one; ' +
                  'lines with none of these are listed as unusable'
                : 'not decided: give “Listening on”';
    return flipped ? `${base}, then flipped by you.` : `${base}.`;
  },
  sidesBy: (sides) =>
    `Rows decided ${Object.entries(sides)
      .map(([k, v]) => `${SIDE_EN[k] ?? k}: ${n(v)}`)
      .join('; ')}.`,
  flip: 'Flip client and server',
  columnsTitle: (h) => `Columns, as read${h ? ' from the header' : ' from the values'}: change what a column holds and the input is read again`,
  columnsHead: ['column', 'holds'],
  columnRole: (c) => `What column ${c} holds`,
  roles: [
    ['ignore', 'nothing used'],
    ['endpoint:client', 'client address:port'],
    ['address:client', 'client address'],
    ['port:client', 'client port'],
    ['endpoint:server', 'server address:port'],
    ['address:server', 'server address'],
    ['port:server', 'server port'],
    ['endpoint:local', 'local address:port'],
    ['address:local', 'local address'],
    ['port:local', 'local port'],
    ['endpoint:peer', 'peer address:port'],
    ['address:peer', 'peer address'],
    ['port:peer', 'peer port'],
    ['endpoint:first', 'first address:port (role unknown)'],
    ['address:first', 'first address (role unknown)'],
    ['port:first', 'first port (role unknown)'],
    ['endpoint:second', 'second address:port (role unknown)'],
    ['address:second', 'second address (role unknown)'],
    ['port:second', 'second port (role unknown)'],
    ['listener', 'listener that received it'],
    ['proto', 'protocol'],
  ],
  listeningFound: 'Listening sockets in the paste',
  partial: 'Stopped early: only the lines read so far are used.',
  cut: (k) => `${plural(k, 'connection')} past the first 5,000,000 were counted but not kept; reuseport-agent predict streams any number.`,
  badTitle: (k) => `Unusable lines: ${n(k)}`,
  badColumns: ['line', 'text', 'why', 'format'],
  notesTitle: (k) => `Read with a note: ${n(k)}`,
  notesColumns: ['line', 'note'],
  mismatched: (k, why) => `${plural(k, 'connection')} not answered: ${why}.`,
  readStatus: (s) => `${plural(s.lines, 'line')} read, ${plural(s.rows, 'connection')} usable.`,
  answeredStatus: (s, a, secret) =>
    `${plural(s.rows, 'connection')} answered for ` +
    `${plural(a.listeners, 'listener')}${secret ? ` under ${secret}` : ' without a secret'}` +
    `${a.unrouted ? `; ${n(a.unrouted)} reach no listener of this group` : ''}${
      a.observed && a.counts ? `; ${n(a.disagree)} differ from the listener observed` : ''
    }.`,
  spreadTitle: 'What holds for every secret',
  spreadPending: 'Simulating…',
  spreadLead: (s) =>
    `Over ${n(s.boots)} random boots, ` +
    `${s.unrouted ? `the ${n(s.tuples - s.unrouted)} of these ${n(s.tuples)} connections that reach the group` : `these ${n(s.tuples)} connections`} ` +
    `spread over ${n(s.listeners)} listeners like this (mean, and 5th–95th percentile):`,
  maxMin: 'Busiest ÷ quietest listener',
  jain: 'Jain’s fairness index (1 is even)',
  emptyShare: 'Listeners left empty',
  maxShare: 'Share of the busiest listener',
  oneListener: 'Any one listener gets',
  bandLine: (b) => `${b.mean < 10 ? b.mean.toFixed(2) : n(Math.round(b.mean))} connections on average, ${n(b.p5)}–${n(b.p95)} in 90 % of boots`,
  unbounded: (x) => `(in ${pct(x)} of boots some listener got nothing, so the ratio is unbounded there)`,
  yours: '(yours)',
  notExchangeable:
    'Listeners are not alike in this group (a CPU preference, a program or a connected member), so no single band is drawn; the table gives each ' +
    'listener’s own range.',
  observedSkew: (c) =>
    `Observed: busiest ÷ quietest ${c.observed.maxMin === null ? '∞ (a listener got nothing)' : c.observed.maxMin.toFixed(2)}, Jain ` +
    `${c.observed.jain.toFixed(3)}: more skewed than ${c.maxMinPercentile.toFixed(0)} % of simulated boots.`,
  byListenersTitle: 'The same connections over other group sizes',
  byListenersHead: ['listeners', 'busiest ÷ quietest, median / 95th percentile', 'listeners left empty'],
  barsTitle: 'Per listener',
  barsTitleSockets: 'Per socket',
  barsNeedSecret: (spread) =>
    'Name a secret, or give the observed listener per line or per worker, to see counts per listener.' +
    (spread ? ` What any one listener gets over random boots is under “${spread}”.` : ''),
  barsUnder: (s) =>
    `Counts under ${s}. The shaded band is the 5th–95th percentile any one listener gets over random boots; the dashed line its mean. Bars outside it ` +
    `are outlined.`,
  barsObserved:
    'Counts as observed in the paste. The shaded band is the 5th–95th percentile any one listener gets over random boots; bars outside it are outlined.',
  barsTyped: 'Counts you gave. The shaded band is the 5th–95th percentile any one listener gets over random boots; bars outside it are outlined.',
  barsLabel: (c, b) =>
    `Bar chart of ${plural(c.length, 'listener')}: from ${n(Math.min(...c))} to ${n(Math.max(...c))} ` +
    `connections${b ? `; the expected band is ${n(Math.round(b.p5))} to ${n(Math.round(b.p95))}` : ''}. The table below lists every count.`,
  listenerAxis: 'listener',
  socketAxis: 'socket (index in your layout)',
  barsSockets: (s) => `Connections per socket of your layout under ${s}, by the full listener lookup.`,
  rowColumnsSockets: ['line', 'client', 'server', 'socket', 'observed'],
  countsTable: 'Counts as a table',
  countsHead: ['listener', 'connections', 'against the band'],
  below: 'below',
  above: 'above',
  within: 'within',
  typedLabel: (v) => `your secret ${v}`,
  randomBootLabel: (v) => `a random boot (${v}; an example, not your server)`,
  recoveredLabel: (v) => `the recovered secret ${v}`,
  rowsTitle: 'Every connection',
  noRows: 'No line held a usable connection.',
  rowsNeedSecret:
    'Without a named secret the table lists no listener per connection: which listener gets which connection depends on the secret. Name one above, or ' +
    'recover it below.',
  search: 'Search',
  searchPlaceholder: 'address, port or line number',
  filterListener: 'Only listener',
  filterListenerHint: 'under the secret, or as observed',
  shown: (k, of) => `${n(k)} of ${n(of)} connections shown.`,
  rowColumns: ['line', 'client', 'server', 'listener', 'observed'],
  none: 'none',
  explain: 'Explain',
  explainRow: (l) => `Explain line ${l}`,
  explainNeedsSecret: 'An explanation needs a named secret: choose one above.',
  explainTitle: (l, s) => `Line ${l} under ${s}`,
  recoverTitle: 'Recover the secret',
  recoverLead: (k) =>
    `${plural(k, 'connection')} carry the listener that received them. Searching all 2³² keys finds every key that sends each to its listener.`,
  recoverNeeds:
    'Recovery needs the listener that received each connection: a fifth column (SADDR SPORT DADDR DPORT LISTENER), a listener column in a CSV, or an ' +
    'agent trace.',
  recoverGo: 'Search every key',
  recoverProgress: (share, eta) => `Searched ${pct(share)}${eta !== undefined ? `, about ${Math.ceil(eta)} s left` : ''}…`,
  recoverFailed: (m) => `The search could not run: ${m}`,
  recovered: (r) =>
    `${r.complete ? 'Searched every key' : `Stopped after ${pct((r.keysPerSecond * r.seconds) / 2 ** 32)} of the keys`} in ${r.seconds.toFixed(1)} s ` +
    `on ${plural(r.workers, 'worker')} (${(r.keysPerSecond / 1e9).toFixed(2)} G keys/s, ${r.plan.isa}). ${plural(r.candidates, 'key')} fit every ` +
    `observation; ` +
    (r.plan.expectedFalseMatches < 0.01
      ? 'by chance fewer than 0.01 would, so the first is yours'
      : `about ${r.plan.expectedFalseMatches.toPrecision(3)} would fit by chance`) +
    `${
      r.plan.moreNeeded ? `; about ${plural(r.plan.moreNeeded, 'more observation')} would make it unique` : ''
    }.${r.leftOut ? ` ${n(r.leftOut)} observations beyond the first 2,000 were not needed and not used.` : ''}`,
  useRecovered: (v) => `Answer under ${v}`,
  exportTitle: 'Export and share',
  exportCsv: 'Download CSV',
  exportJson: 'Download JSON',
  share: 'Copy a link to these settings',
  copied: 'Link copied.',
  linkInAddressBar: 'The link is in the address bar.',
  tooBigForUrl: (max) =>
    `The input is larger than ${n(max)} characters (or is a file), too large for a link: the link holds the settings only. Share the file with it.`,
  card: { kernel: (s) => `Kernel: ${s}`, fallback: (s) => `Fallback: ${s}`, caveats: 'Caveats' },
};

const FORMATS_ZH: [string, string][] = [
  ['auto', '自动识别'],
  ['ss', 'ss -tn（以及 -tan、-tnp、-tne）'],
  ['netstat', 'netstat -tn / -tun'],
  ['conntrack', 'conntrack -L'],
  ['tcpdump', 'tcpdump（每个包一行）'],
  ['proc-net', '/proc/net/tcp、/proc/net/tcp6'],
  ['csv', 'CSV 或 TSV'],
  ['pairs', 'a:端口 b:端口，或 a 端口 b 端口'],
  ['observed', '……再加上实际接收它的监听套接字'],
  ['page', '本页导出的格式'],
  ['trace', 'reuseport-agent 的 trace（JSON）'],
];

const zn = (x: number) => x.toLocaleString('zh-CN');

const zh: PasteText = {
  placeholder: 'State  Recv-Q Send-Q Local Address:Port  Peer Address:Port\nESTAB  0      0      10.0.0.1:8080       10.0.0.7:51234\n…',
  text: '连接',
  textHint: '粘贴 ss、netstat、conntrack、tcpdump、/proc/net/tcp 的输出或 CSV，也可以每行写一个连接。可以把文件拖到这里，或选择文件。',
  file: '或选择文件：',
  fileChosen: (name, b) => `将读取 ${name}（${mb(b)}），而不是文本框中的内容。`,
  pastedAsFile: (c) => `粘贴的内容有 ${zn(c)} 个字符，放进文本框会卡住页面，将作为文件读取。`,
  fileTooBig: (b, max) => `文件大小为 ${mb(b)}，最多读取 ${mb(max)}。请拆分文件，或使用可流式处理的 reuseport-agent predict。`,
  format: '格式',
  formats: FORMATS_ZH,
  fieldWords: {
    localAddress: '本地地址',
    localPort: '本地端口',
    peerAddress: '对端地址',
    peerPort: '对端端口',
    sourceAddress: '源地址',
    sourcePort: '源端口',
    destinationAddress: '目的地址',
    destinationPort: '目的端口',
    listener: '监听套接字编号',
    proto: '协议',
    state: '状态',
  },
  formatWords: {
    ss: 'ss 输出',
    netstat: 'netstat 输出',
    conntrack: 'conntrack -L 输出',
    tcpdump: 'tcpdump 输出',
    'proc-net': '/proc/net/tcp 的内容',
    csv: 'CSV 文件',
    pairs: '地址对格式',
    observed: '地址对加监听套接字编号的格式',
    page: '本页的导出格式',
    bsd: 'FreeBSD 或 macOS 的输出',
  },
  bind: '监听地址',
  bindHint: '监听套接字的 地址:端口 或 :端口；据此判断每行哪一端是服务器',
  bindPlaceholder: '例如 0.0.0.0:8080（可选）',
  bindBad: (m) => `监听地址：${m}`,
  kernel: '内核',
  kernelHint: '内核配置档，或你的 uname -r 输出',
  kernelBad: (m) => `内核：${m}`,
  profile: (r, b) => `使用内核配置档 ${r}（规则依据：${b}）。`,
  proto: '协议',
  listeners: '组内监听套接字数',
  listenersHint: (max) => `1 到 ${max}，按 listen() 顺序编号（UDP 按 bind() 顺序）`,
  listenersBad: (max) => `组内监听套接字数：请输入 1 到 ${max} 之间的整数。`,
  closed: '已关闭的监听套接字',
  closedHint: '全部开始监听后按此顺序关闭，例如 1,3',
  closedBad: (k) => `已关闭的监听套接字：请输入小于 ${k} 的编号，用逗号分隔，例如 1,3。`,
  observedCounts: '你看到的各工作进程连接数（可选）',
  observedCountsHint: '按监听套接字编号顺序，每个一个数，用来与单纯哈希的结果比较',
  countsBad: (k) => `各工作进程连接数：请给出 ${zn(k)} 个整数（每个监听套接字一个），用逗号或空格分隔。`,
  secret: '密钥（每次开机生成的哈希密钥）',
  secretNone: '不指定：只看对任何密钥都成立的结论',
  secretTyped: '我的密钥，在下面填写',
  secretRandom: '随机开机一次（只是示例，不是你的服务器）',
  secretRecovered: '由观测到的监听套接字反推得到',
  secretV4: 'IPv4 密钥',
  secretV4Hint: 'secret + net_hash_mix，32 位十六进制',
  secretV6: 'IPv6 内层密钥',
  secretV6Hint: 'IPv6 行需要；32 位十六进制',
  secretBad: 'IPv4 密钥：请输入 32 位十六进制数，例如 0x1a2b3c4d。',
  innerBad: 'IPv6 内层密钥：请输入 32 位十六进制数，例如 0x1a2b3c4d，或留空。',
  innerMissing: (k) => `IPv6 内层密钥：有 ${zn(k)} 个 IPv6 连接，除 IPv4 密钥外还需要它；请填写你内核的值，或选择随机开机。`,
  layoutTitle: '多个套接字（套接字布局）',
  layout: '套接字布局（JSON）',
  layoutHint: '按 bind 顺序列出套接字，格式与 reuseport-agent predict --layout 相同；给出后，每个连接都按完整的监听查找在这些套接字中求解',
  layoutExample: '插入示例',
  layoutBad: (m) => `套接字布局：${m}。`,
  layoutDescribe: (k) => `你的布局，共 ${zn(k)} 个套接字。`,
  socketsTitle: '你的套接字',
  socketsLead: (k, u, rows) =>
    `在 ${zn(k)} 个套接字上做完整的监听查找：${zn(rows)} 个连接中有 ${zn(rows - u)} 个落到其中某个套接字${u ? `，${zn(u)} 个哪个都到不了` : ''}。`,
  socketsCaption: '各套接字的调用结果及收到的连接',
  socketsHead: ['套接字', '地址', 'bind()', 'listen()', 'reuseport 组', '连接数'],
  callOk: '成功',
  groupMember: (g, m) => `组 ${g}，成员 ${m}`,
  analyse: '分析',
  cancel: '停止',
  progress: '进度',
  ready: '粘贴连接或选择文件，然后点“分析”。',
  nothing: '连接：文本框是空的。请粘贴几行，或选择文件。',
  notRun: '没有进行分析：请看上面列出的问题。',
  working: (phase, d, total) =>
    phase === 'read'
      ? `正在读取：${pct(total ? d / total : 0)}……`
      : phase === 'spread'
        ? `正在模拟开机：${zn(d)} / ${zn(total)}……`
        : `正在计算：${zn(d)} / ${zn(total)}……`,
  urlBad: (p, v) => `URL 参数 ${p}=${v} 在这里无效，已忽略。`,
  readTitle: '读到了什么',
  formatFound: '格式',
  formatName: (f, h) => `${FORMATS_ZH.find(([k]) => k === f)?.[1] ?? f}${h ? '，带表头' : ''}`,
  formatWhy: (d) => {
    const e = d.evidence;
    return (
      `前 ${zn(e.sample)} 行中有 ${zn(e.read)} 行可按${zh.formatWords[d.format] ?? d.format}读取，其中 ${zn(e.sockets)} 行是套接字` +
      (e.names ? `；${zn(e.names)} 行输出的是名字而不是数字：请加 -n 重新运行命令（tcpdump 用 -nn）` : '') +
      (e.mixed ? `；另有 ${zn(e.mixed.lines)} 行是${zh.formatWords[e.mixed.format] ?? e.mixed.format}：粘贴内容混合了多种格式，只读取其中一种` : '') +
      '。'
    );
  },
  formatNone: '无法识别',
  linesRead: '行数',
  lineCounts: (s, w) =>
    `共读取 ${zn(s.lines)} 行：${zn(s.rows)} 个连接已计算，${zn(s.duplicates)} 个重复，${zn(Object.values(s.skipped).reduce((a, b) => a + b, 0))} 行跳过（${
      Object.entries(s.skipped)
        .map(([k, v]) => `${w(k)} ${zn(v)}`)
        .join('，') || '无'
    }），${zn(s.listening)} 个监听套接字，${zn(s.bad + s.undecided)} 行无法使用。`,
  serverSide: '服务器端',
  decision: (d, flipped) => {
    const base =
      d.basis === 'bind'
        ? `端口 ${d.port}，即你在“监听地址”中给出的`
        : d.basis === 'listening'
          ? `端口 ${d.port}，粘贴内容中有该端口的监听套接字`
          : d.basis === 'commonPort'
            ? `端口 ${d.port}，每一行都有这个端口`
            : d.basis === 'format'
              ? '按格式本身的含义（第一个字段是客户端）'
              : d.basis === 'perLine'
                ? '逐行判断：依据粘贴内容中的监听端口、该行自身的方向，或系统端口、知名服务端口对临时端口；三者都没有的行列为无法使用'
                : '无法判断：请填写“监听地址”';
    return flipped ? `${base}，随后由你对调。` : `${base}。`;
  },
  sidesBy: (sides) =>
    `各行的判断依据：${Object.entries(sides)
      .map(([k, v]) => `${SIDE_ZH[k] ?? k} ${zn(v)} 行`)
      .join('；')}。`,
  flip: '对调客户端与服务器',
  columnsTitle: (h) => `读到的各列（${h ? '依据表头' : '依据内容'}）：修改某列的含义后会重新读取`,
  columnsHead: ['列', '含义'],
  columnRole: (c) => `第 ${c} 列的含义`,
  roles: [
    ['ignore', '不使用'],
    ['endpoint:client', '客户端 地址:端口'],
    ['address:client', '客户端地址'],
    ['port:client', '客户端端口'],
    ['endpoint:server', '服务器 地址:端口'],
    ['address:server', '服务器地址'],
    ['port:server', '服务器端口'],
    ['endpoint:local', '本地 地址:端口'],
    ['address:local', '本地地址'],
    ['port:local', '本地端口'],
    ['endpoint:peer', '对端 地址:端口'],
    ['address:peer', '对端地址'],
    ['port:peer', '对端端口'],
    ['endpoint:first', '第一个 地址:端口（角色未知）'],
    ['address:first', '第一个地址（角色未知）'],
    ['port:first', '第一个端口（角色未知）'],
    ['endpoint:second', '第二个 地址:端口（角色未知）'],
    ['address:second', '第二个地址（角色未知）'],
    ['port:second', '第二个端口（角色未知）'],
    ['listener', '实际接收它的监听套接字'],
    ['proto', '协议'],
  ],
  listeningFound: '粘贴内容中的监听套接字',
  partial: '已提前停止：只使用了已读取的行。',
  cut: (k) => `前 5,000,000 个之后的 ${zn(k)} 个连接只计数、未保留；reuseport-agent predict 可流式处理任意数量。`,
  badTitle: (k) => `无法使用的行：${zn(k)}`,
  badColumns: ['行', '内容', '原因', '格式'],
  notesTitle: (k) => `附有说明的行：${zn(k)}`,
  notesColumns: ['行', '说明'],
  mismatched: (k, why) => `${zn(k)} 个连接未计算：${why}。`,
  readStatus: (s) => `已读取 ${zn(s.lines)} 行，其中 ${zn(s.rows)} 个连接可用。`,
  answeredStatus: (s, a, secret) =>
    `已为 ${zn(a.listeners)} 个监听套接字计算 ${zn(s.rows)} 个连接，${secret ? `使用${secret}` : '未指定密钥'}${a.unrouted ? `；${zn(a.unrouted)} 个连接到不了这个组的任何监听套接字` : ''}${
      a.observed && a.counts ? `；${zn(a.disagree)} 个与观测到的监听套接字不一致` : ''
    }。`,
  spreadTitle: '对任何密钥都成立的结论',
  spreadPending: '正在模拟……',
  spreadLead: (s) =>
    `随机开机 ${zn(s.boots)} 次，${s.unrouted ? `这 ${zn(s.tuples)} 个连接中到达该组的 ${zn(s.tuples - s.unrouted)} 个` : `这 ${zn(s.tuples)} 个连接`}在 ${zn(s.listeners)} ` +
    `个监听套接字上的分布如下（均值，以及第 5 至第 95 百分位）：`,
  maxMin: '最忙与最闲监听套接字之比',
  jain: 'Jain 公平性指数（1 表示完全均匀）',
  emptyShare: '没有分到连接的监听套接字',
  maxShare: '最忙的监听套接字所占比例',
  oneListener: '任一监听套接字分到',
  bandLine: (b) => `平均 ${b.mean < 10 ? b.mean.toFixed(2) : zn(Math.round(b.mean))} 个连接，90% 的开机中在 ${zn(b.p5)} 到 ${zn(b.p95)} 之间`,
  unbounded: (x) => `（${pct(x)} 的开机中有监听套接字一个连接也没分到，这时比值无上限）`,
  yours: '（你的）',
  notExchangeable: '这个组里的监听套接字并不等同（有 CPU 偏好、程序或已 connect 的成员），所以不画统一的区间；表中给出每个监听套接字各自的范围。',
  observedSkew: (c) =>
    `观测值：最忙与最闲之比 ${c.observed.maxMin === null ? '∞（有监听套接字一个连接也没分到）' : c.observed.maxMin.toFixed(2)}，Jain 指数 ${c.observed.jain.toFixed(3)}：比 ` +
    `${c.maxMinPercentile.toFixed(0)}% 的模拟开机更不均。`,
  byListenersTitle: '同样的连接换成其他组大小',
  byListenersHead: ['监听套接字数', '最忙与最闲之比，中位数 / 第 95 百分位', '空闲的监听套接字'],
  barsTitle: '各监听套接字',
  barsTitleSockets: '各套接字',
  barsNeedSecret: (spread) =>
    `指定密钥，或给出每行（或每个工作进程）实际观测到的监听套接字，才能看到各监听套接字的连接数。${spread ? `随机开机时任一监听套接字分到的数量见“${spread}”一节。` : ''}`,
  barsUnder: (s) => `使用${s}时的连接数。阴影带是随机开机时任一监听套接字分到数量的第 5 至第 95 百分位，虚线是均值；超出阴影带的柱子加了描边。`,
  barsObserved: '粘贴内容中观测到的连接数。阴影带是随机开机时任一监听套接字分到数量的第 5 至第 95 百分位；超出阴影带的柱子加了描边。',
  barsTyped: '你给出的连接数。阴影带是随机开机时任一监听套接字分到数量的第 5 至第 95 百分位；超出阴影带的柱子加了描边。',
  barsLabel: (c, b) =>
    `${zn(c.length)} 个监听套接字的柱状图：连接数从 ${zn(Math.min(...c))} 到 ` +
    `${zn(Math.max(...c))}${b ? `；预期区间为 ${zn(Math.round(b.p5))} 到 ${zn(Math.round(b.p95))}` : ''}。下表列出全部数值。`,
  listenerAxis: '监听套接字',
  socketAxis: '套接字（在你的布局中的序号）',
  barsSockets: (s) => `使用${s}时，按完整的监听查找，你的布局中各套接字收到的连接数。`,
  rowColumnsSockets: ['行', '客户端', '服务器', '套接字', '观测值'],
  countsTable: '以表格查看连接数',
  countsHead: ['监听套接字', '连接数', '相对预期区间'],
  below: '低于',
  above: '高于',
  within: '区间内',
  typedLabel: (v) => `你的密钥 ${v}`,
  randomBootLabel: (v) => `一次随机开机的密钥（${v}，只是示例，不是你的服务器）`,
  recoveredLabel: (v) => `反推出的密钥 ${v}`,
  rowsTitle: '所有连接',
  noRows: '没有一行包含可用的连接。',
  rowsNeedSecret: '没有指定密钥时，表中不列出每个连接的监听套接字：哪个连接归哪个监听套接字取决于密钥。请在上面指定，或在下面反推。',
  search: '搜索',
  searchPlaceholder: '地址、端口或行号',
  filterListener: '只看监听套接字',
  filterListenerHint: '按所用密钥的结果，或按观测值',
  shown: (k, of) => `显示 ${zn(of)} 个连接中的 ${zn(k)} 个。`,
  rowColumns: ['行', '客户端', '服务器', '监听套接字', '观测值'],
  none: '无',
  explain: '解释',
  explainRow: (l) => `解释第 ${l} 行`,
  explainNeedsSecret: '解释需要指定密钥：请在上面选择。',
  explainTitle: (l, s) => `第 ${l} 行，使用${s}`,
  recoverTitle: '反推密钥',
  recoverLead: (k) => `有 ${zn(k)} 个连接带有实际接收它的监听套接字。遍历全部 2³² 个密钥，可以找出让每个连接都落到其监听套接字的所有密钥。`,
  recoverNeeds: '反推需要每个连接实际由哪个监听套接字接收：第五列（SADDR SPORT DADDR DPORT LISTENER）、CSV 中的监听套接字列，或 agent 的 trace。',
  recoverGo: '遍历全部密钥',
  recoverProgress: (share, eta) => `已搜索 ${pct(share)}${eta !== undefined ? `，约剩 ${Math.ceil(eta)} 秒` : ''}……`,
  recoverFailed: (m) => `无法进行搜索：${m}`,
  recovered: (r) =>
    `${r.complete ? '已搜索全部密钥' : `已在搜索了 ${pct((r.keysPerSecond * r.seconds) / 2 ** 32)} 后停止`}，用时 ${r.seconds.toFixed(1)} 秒，${zn(r.workers)} 个 ` +
    `Web Worker（每秒 ${(r.keysPerSecond / 1e9).toFixed(2)} G 个密钥，${r.plan.isa}）。有 ${zn(r.candidates)} ` +
    `个密钥符合全部观测；${r.plan.expectedFalseMatches < 0.01 ? '偶然符合的预期不到 0.01 个，所以第一个就是你的密钥' : `约 ${r.plan.expectedFalseMatches.toPrecision(3)} 个会偶然符合`}${
      r.plan.moreNeeded ? `；再有约 ${zn(r.plan.moreNeeded)} 个观测即可唯一确定` : ''
    }。${r.leftOut ? `前 2,000 个之后的 ${zn(r.leftOut)} 个观测用不上，未使用。` : ''}`,
  useRecovered: (v) => `使用 ${v} 计算`,
  exportTitle: '导出与分享',
  exportCsv: '下载 CSV',
  exportJson: '下载 JSON',
  share: '复制包含这些设置的链接',
  copied: '链接已复制。',
  linkInAddressBar: '链接已在地址栏中。',
  tooBigForUrl: (max) => `输入超过 ${zn(max)} 个字符（或是文件），放不进链接：链接只包含设置，请另外分享文件。`,
  card: { kernel: (s) => `内核：${s}`, fallback: (s) => `回退：${s}`, caveats: '注意事项' },
};

/** The words for a page language. */
export function pasteText(lang: string): PasteText {
  return langOf(lang) === 'zh-CN' ? zh : en;
}

/** Both languages, for tests. */
export const PASTE_TEXT = { en, zh } as const;
