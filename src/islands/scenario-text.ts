/** The scenario widget's interface words, once per language (chosen from the page's `lang`). */
import { langOf } from '../model/messages';
import type { AcceptModel, Variant } from '../model/sim';
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

const en: ScenarioText = {
  title: (name) => `Scenario: ${name}`,
  model: {
    blocking: 'Shared socket, blocking accept()',
    epoll: 'Shared socket, epoll',
    'epoll-exclusive': 'Shared socket, EPOLLEXCLUSIVE',
    'accept-mutex': 'Shared socket, nginx accept_mutex',
    reuseport: 'SO_REUSEPORT, a listener per worker',
    'reuseport-incoming-cpu': 'SO_REUSEPORT with SO_INCOMING_CPU',
    'reuseport-bpf-cpu': 'SO_REUSEPORT with a BPF program that picks by CPU',
    'reuseport-least-loaded': 'SO_REUSEPORT with a least-loaded BPF program',
  },
  migrate: 'with tcp_migrate_req',
  onKernel: (k) => `on Linux ${k}`,
  figure: {
    jain: "Jain's index (1 = even)",
    maxMin: 'Busiest ÷ quietest worker',
    maxShare: "Busiest worker's share",
    p50: 'Request latency p50 (ms)',
    p99: 'Request latency p99 (ms)',
    stddev: 'Latency standard deviation (ms)',
    synDrops: 'SYNs dropped on a full queue',
    reset: 'Connections reset',
    migrated: 'Moved by tcp_migrate_req',
    wasted: 'Wake-ups that found nothing',
    local: "Accepted on the SYN's own CPU",
  },
  simulated: 'Simulated',
  measuredShort: 'Measured',
  sharesLabel: 'Share of connections accepted per worker, %',
  run: 'Run again',
  stop: 'Stop',
  seed: 'Seed',
  seedBad: 'The seed must be a whole number from 0 to 4294967295.',
  load: 'Load ×',
  loadHint: 'Multiplies the arrival rate (0.1 to 4).',
  loadBad: 'Load must be a number from 0.1 to 4.',
  progress: (run, runs, arrived, total) =>
    `Simulating variant ${run + 1} of ${runs}: ${arrived.toLocaleString('en')} of ${total.toLocaleString('en')} connections arrived`,
  finished: (runs) => `Simulated ${runs} variant${runs === 1 ? '' : 's'} of the same workload.`,
  partial: 'Stopped early: the figures below cover only part of the run.',
  accepts: 'Connections accepted per worker',
  worker: (n) => `w${n}`,
  workerHead: 'Worker',
  figureHead: 'Figure',
  depth: 'Deepest accept queue (connections) against time (ms), one line per queue',
  p99: 'Request latency p99 (ms) against time (ms)',
  assumptions: (k) =>
    `Which listener gets each SYN is the model's answer for Linux ${k}. Wake-up order follows the kernel's wait-queue rules; scheduling, wake-up ` +
    `latency and service times are modelled, not measured.`,
  unknown: (name, known) => `There is no scenario named "${name}". Known: ${known}.`,
  failed: (msg) => `The simulation failed: ${msg}`,
  table: 'Show the numbers as a table',
  ranAs: (cpus, connections, kernel) =>
    `Measured on this machine (Linux ${kernel}) with ${cpus} CPU${cpus === 1 ? '' : 's'} and ${connections.toLocaleString('en')} connections, the ` +
    `arrival rate scaled to the same load per CPU.`,
  sharesVerdict: (v, lang) =>
    `Shares ${v.agrees ? 'agree' : 'differ'} with the simulator on the same workload: ${points(v.error, lang)} percentage points apart per ` +
    `worker on average (agreement: ${points(v.max, lang)} or less).`,
  latencyVerdict: (v, cpus, lang) =>
    `Latency ${v.agrees ? 'agrees' : 'differs'}: p50, p90 and p99 are ${percent(v.distance, lang)} apart on average (agreement: ` +
    `${percent(v.max, lang)} or less).` +
    (v.why === 'saturated'
      ? ` This recording saturated the ${cpus}-CPU machine: the load generator ran on the workers' CPUs, so the measured times include ` +
        `waiting for a CPU and the scheduler's time slices, which the simulator does not model.`
      : v.why === 'scheduler'
        ? " The simulator models no CPU scheduler: the wake-ups and time slices of this machine's scheduler are in the measured times only."
        : ''),
  wastedCounted:
    'The two wake-up counts are of different things. The simulator counts every worker woken for a connection that another took. The ' +
    'recording sees only accept() calls that found nothing after epoll_wait() had returned: the kernel checks the socket again before ' +
    'epoll_wait() returns, and a worker woken for a connection already taken goes back to sleep inside the kernel, uncounted. The measured ' +
    'count is a floor.',
  scenarioTitle: {
    'six-connections': 'Six connections, three workers',
    'shared-queue-under-load': 'A shared queue under load',
    'per-worker-queues-latency': 'Per-worker queues and latency',
    'slow-worker': 'A slow worker',
    'stalled-worker': 'A stalled worker',
    reload: 'A reload',
    'few-clients': 'Few clients',
    'long-lived-favourite': 'Long-lived connections and the favourite',
    'incoming-cpu': 'SO_INCOMING_CPU and CPU steering',
    'fork-vs-reuseport': 'Forty-eight workers: fork against reuseport',
  },
  match: {
    counts: 'Connections per worker',
    countsHint: 'One number per worker, separated by spaces, commas or new lines (2 to 4096 workers), e.g. from ss -ltn Recv-Q or your server’s own counters.',
    p50: 'Median latency (ms, optional)',
    p99: 'p99 latency (ms, optional)',
    latencyHint: 'Give both to compare tails as well.',
    find: 'Find similar scenarios',
    progress: (done, total) => `Simulating ${done.toLocaleString('en')} of ${total.toLocaleString('en')} variants…`,
    partial: 'Stopped early: only the variants simulated so far are ranked.',
    results: 'Closest scenarios',
    yours: 'Yours',
    shapeHead: ['', 'Concentration', 'Idle share', 'Evenness', 'Distance'],
    shapeCaption:
      'Concentration: 0 when even, 1 when one worker has everything. Idle share: workers with nothing. Evenness: Jain’s index from 0 to 1. Distance: ' +
      'the sum of the differences from yours.',
    open: (title) => `Open “${title}”`,
    countsBad: (position, value) => `Count ${position} (“${value}”) is not a whole number from 0 to 10¹².`,
    countsCount: (n) => `Give 2 to 4096 counts, one per worker; there are ${n}.`,
    latencyBad: (field) => `${field} must be a positive number of milliseconds, or empty.`,
  },
};

const zh: ScenarioText = {
  title: (name) => `场景：${name}`,
  model: {
    blocking: '共享监听套接字，阻塞式 accept()',
    epoll: '共享监听套接字，epoll',
    'epoll-exclusive': '共享监听套接字，EPOLLEXCLUSIVE',
    'accept-mutex': '共享监听套接字，nginx accept_mutex',
    reuseport: 'SO_REUSEPORT，每个工作进程一个监听套接字',
    'reuseport-incoming-cpu': 'SO_REUSEPORT 加 SO_INCOMING_CPU',
    'reuseport-bpf-cpu': 'SO_REUSEPORT 加按 CPU 选择的 BPF 程序',
    'reuseport-least-loaded': 'SO_REUSEPORT 加选负载最低者的 BPF 程序',
  },
  migrate: '开启 tcp_migrate_req',
  onKernel: (k) => `Linux ${k}`,
  figure: {
    jain: 'Jain 公平指数（1 表示完全均匀）',
    maxMin: '最忙工作进程 ÷ 最闲工作进程',
    maxShare: '最忙工作进程所占比例',
    p50: '请求延迟 p50（毫秒）',
    p99: '请求延迟 p99（毫秒）',
    stddev: '延迟标准差（毫秒）',
    synDrops: '因全连接队列已满而丢弃的 SYN',
    reset: '被重置的连接',
    migrated: '经 tcp_migrate_req 迁移的连接',
    wasted: '被唤醒却无连接可取的次数',
    local: '在收到 SYN 的 CPU 上被 accept 的比例',
  },
  simulated: '模拟',
  measuredShort: '实测',
  sharesLabel: '每个工作进程 accept 的连接所占比例（%）',
  run: '重新运行',
  stop: '停止',
  seed: '随机种子',
  seedBad: '随机种子必须是 0 到 4294967295 之间的整数。',
  load: '负载倍数',
  loadHint: '按此倍数调整连接到达速率（0.1 到 4）。',
  loadBad: '负载倍数必须是 0.1 到 4 之间的数。',
  progress: (run, runs, arrived, total) =>
    `正在模拟第 ${run + 1} 个变体（共 ${runs} 个）：已到达 ${arrived.toLocaleString('zh-CN')} / ${total.toLocaleString('zh-CN')} 个连接`,
  finished: (runs) => `同一负载下共模拟了 ${runs} 个变体。`,
  partial: '已提前停止：下面的数字只覆盖了部分运行。',
  accepts: '每个工作进程 accept 的连接数',
  worker: (n) => `w${n}`,
  workerHead: '工作进程',
  figureHead: '指标',
  depth: '全连接队列的最大深度（连接数）随时间（毫秒）的变化，每个队列一条线',
  p99: '请求延迟 p99（毫秒）随时间（毫秒）的变化',
  assumptions: (k) =>
    `每个 SYN 交给哪个监听套接字，取自模型对 Linux ${k} 的计算；唤醒顺序遵循内核等待队列的规则；调度、唤醒延迟和服务时间是模型假设，并非实测。`,
  unknown: (name, known) => `没有名为“${name}”的场景。现有场景：${known}。`,
  failed: (msg) => `模拟失败：${msg}`,
  table: '以表格显示数字',
  ranAs: (cpus, connections, kernel) =>
    `实测在本机（Linux ${kernel}）上进行，使用 ${cpus} 个 CPU、${connections.toLocaleString('zh-CN')} 个连接，到达速率按每个 CPU 负载相同进行了缩放。`,
  sharesVerdict: (v, lang) =>
    `份额${v.agrees ? '与模拟器一致' : '与模拟器不一致'}（相同负载）：每个工作进程平均相差 ${points(v.error, lang)} 个百分点（一致要求不超过 ${points(v.max, lang)}）。`,
  latencyVerdict: (v, cpus, lang) =>
    `延迟${v.agrees ? '一致' : '不一致'}：p50、p90、p99 平均相差 ${percent(v.distance, lang)}（一致要求不超过 ${percent(v.max, lang)}）。` +
    (v.why === 'saturated'
      ? `这次录制让这台 ${cpus} 个 CPU 的机器满负荷运行：负载生成器与工作进程共用 CPU，实测时间里包含了等待 CPU 的时间和调度器的时间片，而模拟器不模拟这些。`
      : v.why === 'scheduler'
        ? '模拟器不模拟 CPU 调度器：本机调度器带来的唤醒和时间片只体现在实测时间里。'
        : ''),
  wastedCounted:
    '两个唤醒计数统计的不是同一件事。模拟器统计的是每个被唤醒、而连接已被别的工作进程取走的工作进程。录制只能看到 epoll_wait() 返回之后 accept() 一无所获的调用：' +
    '内核在 epoll_wait() 返回之前会再检查一次套接字，为一个已被取走的连接而醒来的工作进程会在内核里重新睡下，不被计数。所以实测值只是下限。',
  scenarioTitle: {
    'six-connections': '三个工作进程，六个连接',
    'shared-queue-under-load': '负载下的共享队列',
    'per-worker-queues-latency': '每个工作进程一个队列与延迟',
    'slow-worker': '慢的工作进程',
    'stalled-worker': '卡住的工作进程',
    reload: '一次重载',
    'few-clients': '客户端很少',
    'long-lived-favourite': '长连接与“宠儿”',
    'incoming-cpu': 'SO_INCOMING_CPU 与按 CPU 引导',
    'fork-vs-reuseport': '四十八个工作进程：fork 与 reuseport',
  },
  match: {
    counts: '每个工作进程的连接数',
    countsHint: '每个工作进程一个数，用空格、逗号或换行分隔（2 到 4096 个工作进程），可取自 ss -ltn 的 Recv-Q 或服务器自身的计数。',
    p50: '延迟中位数（毫秒，可选）',
    p99: 'p99 延迟（毫秒，可选）',
    latencyHint: '两者都填，才会同时比较长尾。',
    find: '查找相似场景',
    progress: (done, total) => `正在模拟第 ${done.toLocaleString('zh-CN')} 个变体（共 ${total.toLocaleString('zh-CN')} 个）……`,
    partial: '已提前停止：只对已模拟的变体排序。',
    results: '最接近的场景',
    yours: '你的数据',
    shapeHead: ['', '集中度', '空闲比例', '均匀度', '距离'],
    shapeCaption:
      '集中度：完全均匀时为 0，全部落在一个工作进程上时为 1。空闲比例：一个连接都没有的工作进程所占比例。均匀度：Jain 指数，取值 0 到 1。距离：与你的数据各项差值之和。',
    open: (title) => `打开“${title}”`,
    countsBad: (position, value) => `第 ${position} 个数（“${value}”）不是 0 到 10¹² 之间的整数。`,
    countsCount: (n) => `请给出 2 到 4096 个数，每个工作进程一个；现在有 ${n} 个。`,
    latencyBad: (field) => `${field}必须是正的毫秒数，或者留空。`,
  },
};

/** A share difference (0 to 1) in percentage points, to one decimal (two below one point). */
function points(v: number, lang: string): string {
  const p = v * 100;
  return p.toLocaleString(lang, { maximumFractionDigits: p < 1 ? 2 : 1 });
}

/** A relative distance as a percentage. */
function percent(v: number, lang: string): string {
  return `${Math.round(v * 100).toLocaleString(lang)}%`;
}

export function scenarioText(lang: string): ScenarioText {
  return langOf(lang) === 'zh-CN' ? zh : en;
}

/** Both languages, for tests. */
export const SCENARIO_TEXT = { en, zh } as const;

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
