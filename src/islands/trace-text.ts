/** The trace widgets' words, once per language (chosen from the page's `lang`). */
import { langOf } from '../model/messages';
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

const en: TraceText = {
  shows: (e) => e.shows,
  kernelLine: (r, p) => `${r} (profile ${p})`,
  groupLine: (g) =>
    `${g.proto.toUpperCase()} ${hostOf(g.bind)}:${g.port}, ${g.listeners} listener${g.listeners === 1 ? '' : 's'}` +
    `${g.closed?.length ? `, closed ${g.closed.join(', ')}` : ''}${g.v6only ? ', v6only' : ''}${g.tcpMigrateReq ? ', tcp_migrate_req' : ''}`,
  selection: (s) =>
    s.bpf
      ? `classic BPF program: ${s.bpf.kind === 'cpu' ? 'returns the CPU' : `returns the payload mod ${s.bpf.modulus}`}`
      : s.incomingCpu?.length
        ? `SO_INCOMING_CPU (listener→CPU ${s.incomingCpu.map((p) => `${p.listener}→${p.cpu}`).join(' ')})`
        : 'the hash',
  benchNote: (n) =>
    'The article measured 48 server and 48 client processes on two 48-core machines over a 40G link, 1,000,000 connections per client: ' +
    `fork 4m45s, SO_REUSEPORT 1m36s (ratio 2.95). This machine has ${n} CPU${n === 1 ? '' : 's'}, shared by the servers, the clients and the loopback, ` +
    "so its numbers are not comparable to the article's, only the direction and the spread are.",
  choose: 'Trace',
  orDrop: 'or open a file from reuseport-agent record',
  dropHere: 'Drop a trace file here',
  loading: (n) => `Reading ${n}…`,
  predicting: (d, t) => `Predicting with the model: ${d.toLocaleString('en')} of ${t.toLocaleString('en')} events`,
  cancel: 'Cancel',
  cancelled: 'Cancelled: the events predicted so far are not shown.',
  tooBig: (mb, max) => `The file is ${mb.toFixed(1)} MB; the viewer reads at most ${max} MB.`,
  notJson: (n, m) => `${n} is not JSON: ${m}`,
  invalid: (n) => `${n} is not a trace of format v1:`,
  fetchFailed: (u, s) => `Could not load ${u}: ${s}`,
  layout: 'How it was recorded',
  kernel: 'Kernel',
  group: 'Group',
  program: 'Selection',
  recorded: 'Recorded',
  command: 'Command',
  cutMore: (n) => ` … and ${n.toLocaleString('en')} more characters, not shown`,
  key: 'Per-boot key',
  keyFromManifest: (k, from) =>
    from
      ? `${k}, recovered by reuseport-agent verify --trace from ${from}, recorded in the same run (same boot); this trace's own choices cannot be searched`
      : `${k}, recovered from this trace by reuseport-agent verify --trace`,
  keyNone: 'not known: only choices a program made without the hash are predicted. Enter the key below if you have it.',
  keyLabel: 'IPv4 key (hex), from reuseport-agent recover',
  keyBad: 'The key must be a 32-bit hex value such as 0x2f3923d9.',
  apply: 'Predict with this key',
  agreementAll: (a, n) =>
    a.predicted === 0
      ? `None of the ${n.toLocaleString('en')} events can be predicted without the key.`
      : `The model agrees with the kernel on ${a.agreed.toLocaleString('en')} of ${a.predicted.toLocaleString('en')} predicted events ` +
        `(${pct(a.agreed, a.predicted)})${a.needsKey ? `; ${a.needsKey.toLocaleString('en')} need the key` : ''}.`,
  agreementHeld: (a, train) =>
    `Leaving out the first ${train} events (those a key search would use): ${a.agreed.toLocaleString('en')} of ${a.predicted.toLocaleString('en')} ` +
    `(${pct(a.agreed, a.predicted)}).`,
  spread: (s) =>
    `Uniform expectation ${s.expected.toFixed(1)} per open listener; busiest / quietest = ${Number.isFinite(s.maxOverMin) ? s.maxOverMin.toFixed(2) : '∞'}.`,
  barsLabel: (s) => `Events per listener: ${s.bars.map((b) => `listener ${b.listener}: ${b.count}`).join(', ')}; uniform expectation ${s.expected.toFixed(1)}.`,
  listenerAxis: 'listener (dashed: uniform expectation)',
  countsTable: 'Counts per listener as a table',
  listener: 'Listener',
  count: 'Events',
  vsExpected: 'Against uniform',
  events: 'Events',
  seq: '#',
  tuple: 'Client → server',
  cpu: 'CPU',
  kernelPick: 'Kernel',
  modelPick: 'Model',
  agrees: 'Agree',
  needsKey: 'needs key',
  noSocket: 'none',
  yes: 'yes',
  no: 'NO',
  explain: 'Explain',
  explainRow: (s) => `Explain event ${s}`,
  onlyMismatches: 'Only disagreements',
  prev: 'Previous',
  next: 'Next',
  page: (f, t, n) => `Events ${f.toLocaleString('en')}–${t.toLocaleString('en')} of ${n.toLocaleString('en')}`,
  open: 'Open in the trace viewer',
  none: 'none',
  benchTitle: 'Benchmark: one shared listener (fork) against one SO_REUSEPORT listener per worker',
  benchSetup: (w, c, n, a, p) => `${w} worker processes, ${c} client processes × ${n.toLocaleString('en')} connections each, accept by ${a}, on ${p} CPUs.`,
  benchCols: ['Mode', 'Seconds', 'Connections/s', 'Accepts per worker', 'Max/min', 'Jain'],
  benchPerWorker: 'accepts per worker',
  benchWorkerAxis: 'worker (dashed: even split)',
};

/** The Chinese sentence for each curated recording, keyed by its file in public/traces/ (the manifest's `file`). */
const ZH_SHOWS: Readonly<Record<string, string>> = {
  'tcp-v4-specific-8.json': '8 个 TCP 监听套接字绑定 127.0.0.1：64 个客户端的 1000 个连接由哈希分散到各套接字',
  'tcp-v4-wildcard-8.json': '8 个 TCP 监听套接字绑定 0.0.0.0：从 5.0 起，哈希看到的本地地址是 0',
  'udp-v4-specific-8.json': '8 个 UDP 套接字绑定 127.0.0.1：UDP 的哈希仍包含本地端口',
  'tcp-v4-closed-1-5.json': '8 个 TCP 监听套接字，收流量前先关闭 1 号、再关闭 5 号：最后一个成员依次移入空出的位置',
  'tcp-v4-130.json': '130 个 TCP 监听套接字：成员超过 128 个后，socks[] 扩大一倍到 256',
  'tcp-v4-incoming-cpu.json': '4 个 TCP 监听套接字都设置 SO_INCOMING_CPU，客户端轮流绑定到各 CPU：从 6.2 起，每个连接都落到其 CPU 对应的监听套接字上',
  'udp-v4-bpf-cpu.json': '64 个 UDP 套接字挂上返回 CPU 编号的经典 BPF 程序：由程序而不是哈希来选择',
  'udp-v4-bpf-payload-mod-4.json': '8 个 UDP 套接字挂上返回“负载 mod 4”的程序：第 k 个数据报落到 k mod 4 号套接字',
  'tcp-v6-wildcard-netns.json': '8 个 TCP 监听套接字绑定 [::]，在独立的网络命名空间中，客户端地址来自 fd00::/112',
  'bench-fork-vs-reuseport.json':
    '那篇比较 fork 与 reuseport 的文章中的基准测试，在本机上的结果：fork() 后多个工作进程共享一个监听套接字，对比每个工作进程一个 SO_REUSEPORT 监听套接字；耗时与各工作进程接收的连接数',
  'bench-fork-vs-reuseport-epoll.json':
    '同一基准测试，工作进程改用 epoll：fork 模式下所有工作进程都在 epoll 中等待同一个共享监听套接字；各工作进程的接收数显示出偏斜',
};

const zh: TraceText = {
  shows: (e) => ZH_SHOWS[e.file] ?? e.shows,
  kernelLine: (r, p) => `${r}（模型配置 ${p}）`,
  groupLine: (g) =>
    `${g.proto.toUpperCase()} ${hostOf(g.bind)}:${g.port}，${g.listeners} 个监听套接字` +
    `${g.closed?.length ? `，已关闭 ${g.closed.join('、')} 号` : ''}${g.v6only ? '，v6only' : ''}${g.tcpMigrateReq ? '，tcp_migrate_req' : ''}`,
  selection: (s) =>
    s.bpf
      ? `经典 BPF 程序：${s.bpf.kind === 'cpu' ? '返回 CPU 编号' : `返回负载 mod ${s.bpf.modulus}`}`
      : s.incomingCpu?.length
        ? `SO_INCOMING_CPU（监听套接字→CPU：${s.incomingCpu.map((p) => `${p.listener}→${p.cpu}`).join(' ')}）`
        : '哈希',
  benchNote: (n) =>
    '文章的测量用了两台 48 核机器、48 个服务端进程和 48 个客户端进程，经 40G 链路，每个客户端 1,000,000 个连接：' +
    `fork 4 分 45 秒，SO_REUSEPORT 1 分 36 秒（比值 2.95）。本机只有 ${n} 个 CPU，由服务端、客户端和回环接口共用，` +
    '所以这里的数字不能与文章的直接比较，能比较的只有方向和分布。',
  choose: '轨迹',
  orDrop: '或打开 reuseport-agent record 生成的文件',
  dropHere: '把轨迹文件拖到这里',
  loading: (n) => `正在读取 ${n}…`,
  predicting: (d, t) => `模型预测中：${d.toLocaleString('zh-CN')} / ${t.toLocaleString('zh-CN')} 个事件`,
  cancel: '取消',
  cancelled: '已取消：已预测的事件不会显示。',
  tooBig: (mb, max) => `文件大小为 ${mb.toFixed(1)} MB，查看器最多读取 ${max} MB。`,
  notJson: (n, m) => `${n} 不是合法的 JSON：${m}`,
  invalid: (n) => `${n} 不是 v1 格式的轨迹：`,
  fetchFailed: (u, s) => `无法加载 ${u}：${s}`,
  layout: '录制条件',
  kernel: '内核',
  group: '组',
  program: '选择方式',
  recorded: '录制时间',
  command: '命令',
  cutMore: (n) => ` ……另有 ${n.toLocaleString('zh-CN')} 个字符未显示`,
  key: '本次开机的密钥',
  keyFromManifest: (k, from) =>
    from
      ? `${k}，由 reuseport-agent verify --trace 从同一次运行（同一次开机）录制的 ${from} 中恢复；无法用本轨迹自身的选择来搜索密钥`
      : `${k}，由 reuseport-agent verify --trace 从本轨迹中恢复`,
  keyNone: '未知：只能预测程序不经哈希直接做出的选择。如果知道密钥，可在下方输入。',
  keyLabel: 'IPv4 密钥（十六进制），来自 reuseport-agent recover',
  keyBad: '密钥应为 32 位十六进制数，例如 0x2f3923d9。',
  apply: '用此密钥预测',
  agreementAll: (a, n) =>
    a.predicted === 0
      ? `没有密钥，${n.toLocaleString('zh-CN')} 个事件全都无法预测。`
      : `在 ${a.predicted.toLocaleString('zh-CN')} 个已预测事件中，模型与内核一致的有 ${a.agreed.toLocaleString('zh-CN')} ` +
        `个（${pct(a.agreed, a.predicted)}）${a.needsKey ? `；另有 ${a.needsKey.toLocaleString('zh-CN')} 个需要密钥` : ''}。`,
  agreementHeld: (a, train) =>
    `不计前 ${train} 个事件（即密钥搜索会用到的事件）：${a.agreed.toLocaleString('zh-CN')} / ${a.predicted.toLocaleString('zh-CN')}（${pct(a.agreed, a.predicted)}）。`,
  spread: (s) =>
    `均匀分布时，每个未关闭的监听套接字应得 ${s.expected.toFixed(1)} 个；最忙 / 最闲 = ${Number.isFinite(s.maxOverMin) ? s.maxOverMin.toFixed(2) : '∞'}。`,
  barsLabel: (s) => `各监听套接字的事件数：${s.bars.map((b) => `${b.listener} 号 ${b.count} 个`).join('，')}；均匀分布时期望为 ${s.expected.toFixed(1)}。`,
  listenerAxis: '监听套接字编号（虚线：均匀分布期望值）',
  countsTable: '以表格查看各监听套接字的计数',
  listener: '监听套接字',
  count: '事件数',
  vsExpected: '与均匀分布相比',
  events: '事件',
  seq: '序号',
  tuple: '客户端 → 服务端',
  cpu: 'CPU',
  kernelPick: '内核',
  modelPick: '模型',
  agrees: '一致',
  needsKey: '需密钥',
  noSocket: '无',
  yes: '是',
  no: '否',
  explain: '详解',
  explainRow: (s) => `详解第 ${s} 个事件`,
  onlyMismatches: '只看不一致的',
  prev: '上一页',
  next: '下一页',
  page: (f, t, n) => `第 ${f.toLocaleString('zh-CN')}–${t.toLocaleString('zh-CN')} 个事件，共 ${n.toLocaleString('zh-CN')} 个`,
  open: '在轨迹查看器中打开',
  none: '无',
  benchTitle: '基准测试：共享一个监听套接字（fork）与每个工作进程一个 SO_REUSEPORT 监听套接字',
  benchSetup: (w, c, n, a, p) => `${w} 个工作进程，${c} 个客户端进程，每个发起 ${n.toLocaleString('zh-CN')} 个连接，用 ${a} 接收连接，${p} 个 CPU。`,
  benchCols: ['模式', '耗时（秒）', '连接数/秒', '各工作进程接收数', '最大/最小', 'Jain 指数'],
  benchPerWorker: '各工作进程接收的连接数',
  benchWorkerAxis: '工作进程（虚线：平均分配）',
};

/** The words for the page's language. */
export function traceText(lang = document.documentElement.lang): TraceText {
  return langOf(lang) === 'zh-CN' ? zh : en;
}
