/** The trace widgets' words, once per language (chosen from the page's `lang`). */
import { langOf } from '../model/messages';
import type { Spread, TraceSummary } from '../scene/trace-view';

export interface TraceText {
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
  key: string;
  keyFromManifest: (k: string, from?: string) => string;
  keyNone: string;
  keyLabel: string;
  keyBad: string;
  apply: string;
  agreementAll: (a: TraceSummary['all'], n: number) => string;
  agreementHeld: (a: TraceSummary['heldOut'], train: number) => string;
  spread: (s: Spread) => string;
  barsLabel: (s: Spread) => string;
  listenerAxis: string;
  countsTable: string;
  listener: string;
  count: string;
  vsExpected: string;
  events: string;
  seq: string;
  tuple: string;
  cpu: string;
  kernelPick: string;
  modelPick: string;
  agrees: string;
  needsKey: string;
  noSocket: string;
  yes: string;
  no: string;
  explain: string;
  explainRow: (seq: number) => string;
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

const en: TraceText = {
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

const zh: TraceText = {
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
