/** The exercise widget's interface words, once per language (chosen from the page's `lang`). */
import { langOf, type Errno } from '../model/messages';
import type { ExplainCardText } from '../render/explain-card';
import type { AcceptModel } from '../model/sim';

export interface ExerciseText {
  /** The widget's accessible name, per kind. */
  title: { syn: string; bind: string; model: string };
  progress: (question: number, total: number) => string;
  score: (score: number, answered: number) => string;
  /** The question asked, per kind. */
  ask: { syn: string; bind: string; model: string };
  /** The group of a SYN question. */
  group: (proto: string, listeners: number, bound: string, kernel: string) => string;
  hashKey: string;
  hashKeyHint: string;
  syn: string;
  slots: string;
  /** Row headings of the socks[] table. */
  slotHead: [string, string];
  chain: string;
  chainHint: string;
  closed: (listeners: string) => string;
  listener: (n: number) => string;
  showHint: string;
  hideHint: string;
  hintHash: (hash: string, formula: string) => string;
  /** How the group picks from the hash, by the model's selection kind. */
  hintRule: { group: string; reservoir: string };
  /** The sockets of a bind question. */
  sockets: (kernel: string) => string;
  socket: (n: number) => string;
  newSocket: string;
  newCalls: string;
  on: string;
  off: string;
  uid: string;
  /** A socket's state after its calls, by the model's `SockState`. */
  state: { listen: string; bound: string; time_wait: string; connected: string };
  /** The answer choices of a bind question. */
  outcome: Record<'success' | Errno, string>;
  synRight: (listener: number) => string;
  synWrong: (chose: number, listener: number) => string;
  bindRight: (outcome: string) => string;
  bindWrong: (chose: string, outcome: string) => string;
  yourAnswer: string;
  rightAnswer: string;
  /** After a wrong answer in the recap: what was right. */
  recapRight: (answer: string) => string;
  conflicts: (socket: number) => string;
  conflictBadge: string;
  noConflict: string;
  why: string;
  next: string;
  finish: string;
  done: string;
  final: (score: number, total: number) => string;
  again: string;
  fresh: string;
  card: ExplainCardText;
  /** The workload of an accept-model question. */
  workload: (title: string, workers: number, cpus: number, connections: number, kernel: string) => string;
  simSeed: (seed: number) => string;
  simulating: (done: number, total: number) => string;
  simStopped: string;
  modelRight: (model: string) => string;
  modelWrong: (chose: string, model: string) => string;
  sameWorkload: string;
  shownRun: string;
  /** What gives each accept model away in a histogram and its figures. */
  tell: Record<AcceptModel, string>;
}

const en: ExerciseText = {
  title: { syn: 'Exercise: from SYN to listener', bind: 'Exercise: the bind() rules', model: 'Exercise: which accept model made this histogram?' },
  progress: (q, n) => `Question ${q} of ${n}`,
  score: (s, a) => `Score: ${s} of ${a}`,
  ask: { syn: 'Which listener will this SYN reach?', bind: 'What will this bind() return?', model: 'Which accept model made this histogram?' },
  group: (p, n, b, k) => `${n} ${p} listeners with SO_REUSEPORT, bound to ${b}, kernel ${k}.`,
  hashKey: 'Hash key',
  hashKeyHint: 'secret + net_hash_mix, drawn at boot',
  syn: 'The SYN (client → server)',
  slots: 'socks[]: the listener in each slot',
  slotHead: ['slot', 'listener'],
  chain: 'Listener chain, newest first',
  chainHint: 'this kernel has no group: it scans the chain',
  closed: (l) => `Closed before the SYN: ${l}.`,
  listener: (n) => `Listener ${n}`,
  showHint: 'Show a hint',
  hideHint: 'Hide the hint',
  hintHash: (h, f) => `The model hashes this SYN to 0x${h} (${f}).`,
  hintRule: {
    group: 'The group takes slot (hash × listening members) >> 32, reciprocal_scale, and the listener in that slot.',
    reservoir: 'Without a group, the kernel walks the chain and keeps one of the equal best scores, chosen by the hash.',
  },
  sockets: (k) => `Sockets already on the host, in bind() order (kernel ${k}):`,
  socket: (n) => `Socket ${n}`,
  newSocket: 'New socket',
  newCalls: 'calls bind() (no listen() yet)',
  on: 'on',
  off: 'off',
  uid: 'UID',
  state: { listen: 'listening', bound: 'bound', time_wait: 'TIME_WAIT', connected: 'connected' },
  outcome: {
    success: 'bind() succeeds',
    EADDRINUSE: 'EADDRINUSE (address already in use)',
    EINVAL: 'EINVAL (invalid argument)',
    ENOMEM: 'ENOMEM (out of memory)',
    EBADF: 'EBADF (bad file descriptor)',
    EOPNOTSUPP: 'EOPNOTSUPP (operation not supported)',
    ENOPROTOOPT: 'ENOPROTOOPT (protocol not available)',
    EISCONN: 'EISCONN (already connected)',
    ENOTCONN: 'ENOTCONN (not connected)',
    ENETUNREACH: 'ENETUNREACH (network unreachable)',
    ENODEV: 'ENODEV (no such device)',
  },
  synRight: (l) => `Right: the SYN reaches listener ${l}.`,
  synWrong: (c, l) => `Not quite: you chose listener ${c}; the SYN reaches listener ${l}.`,
  bindRight: (o) => `Right: ${o}.`,
  bindWrong: (c, o) => `Not quite: you chose ${c}; the answer is ${o}.`,
  yourAnswer: 'your answer',
  rightAnswer: 'the right answer',
  recapRight: (a) => ` (the right answer: ${a})`,
  conflicts: (s) => `It conflicts with socket ${s}.`,
  conflictBadge: 'conflicts',
  noConflict: 'No bound socket refuses it: no address overlaps on this port, or every overlap is allowed by the options both sockets set.',
  why: 'How the kernel chose',
  next: 'Next question',
  finish: 'See your score',
  done: 'Done',
  final: (s, n) => `You answered ${s} of ${n} correctly.`,
  again: 'Try again',
  fresh: 'New questions',
  card: { kernel: (s) => `Kernel: ${s}`, fallback: (s) => `Fallback: ${s}`, caveats: 'Caveats' },
  workload: (title, w, c, n, k) =>
    `${title}: ${w} workers on ${c} CPUs, ${n.toLocaleString('en')} connections, Linux ${k}. The simulator ran it under one of the accept models below.`,
  simSeed: (s) => `Simulator seed ${s}`,
  simulating: (d, n) => `Simulating run ${d + 1} of ${n}…`,
  simStopped: 'The simulation stopped before the question was ready.',
  modelRight: (m) => `Right: ${m}.`,
  modelWrong: (c, m) => `Not quite: you chose ${c}; the histogram is from ${m}.`,
  sameWorkload: 'The same workload and seed under each choice:',
  shownRun: 'the run shown',
  tell: {
    blocking: 'Blocking accept() wakes the worker that has slept longest, so connections go round the workers in turn: an even histogram.',
    epoll: 'Plain epoll wakes every idle worker for each connection and one wins: the spread is fairly even, but most wake-ups find nothing.',
    'epoll-exclusive':
      'EPOLLEXCLUSIVE wakes the first idle waiter on the list, so the first workers take the most: a falling staircase, or one favourite at light load.',
    'accept-mutex':
      "nginx's accept_mutex lets one worker accept at a time and makes the others retry after 500 ms: uneven counts and a tail of hundreds of milliseconds.",
    reuseport:
      'SO_REUSEPORT gives each worker its own queue and picks it by the 4-tuple hash: no wasted wake-ups, counts only as even as the hash, and a slow ' +
      'or stopped worker keeps its share, so the tail grows.',
    'reuseport-incoming-cpu': 'SO_INCOMING_CPU sends each connection to the listener bound to the CPU that received it: the spread follows the receiving CPUs.',
    'reuseport-bpf-cpu': 'A BPF program that picks the listener by CPU spreads connections as the receiving CPUs are spread.',
    'reuseport-least-loaded':
      'A least-loaded BPF program picks the listener with the shortest queue: no wasted wake-ups, and a slow or stopped worker gets fewer connections.',
  },
};

const zh: ExerciseText = {
  title: { syn: '练习：SYN 交给哪个监听套接字', bind: '练习：bind() 的规则', model: '练习：这张直方图出自哪种 accept 模型？' },
  progress: (q, n) => `第 ${q} 题，共 ${n} 题`,
  score: (s, a) => `得分：已答 ${a} 题，答对 ${s} 题`,
  ask: { syn: '这个 SYN 会到达哪个监听套接字？', bind: '这次 bind() 会返回什么？', model: '这张直方图是哪种 accept 模型产生的？' },
  group: (p, n, b, k) => `${n} 个设置了 SO_REUSEPORT（端口复用）的 ${p} 监听套接字，绑定到 ${b}，内核 ${k}。`,
  hashKey: '哈希密钥',
  hashKeyHint: 'secret + net_hash_mix，开机时随机生成',
  syn: 'SYN（客户端 → 服务器）',
  slots: 'socks[]：每个槽位上的监听套接字',
  slotHead: ['槽位', '监听套接字'],
  chain: '监听链表，最新的在前',
  chainHint: '这个内核还没有 reuseport 组，会扫描整条链表',
  closed: (l) => `SYN 到达之前已关闭：${l}。`,
  listener: (n) => `监听套接字 ${n}`,
  showHint: '显示提示',
  hideHint: '隐藏提示',
  hintHash: (h, f) => `模型算出这个 SYN 的哈希值为 0x${h}（${f}）。`,
  hintRule: {
    group: '组用 reciprocal_scale 选槽位：(哈希 × 正在监听的成员数) >> 32，SYN 交给该槽位上的监听套接字。',
    reservoir: '没有组时，内核遍历整条链表，在得分并列最高的套接字中按哈希值保留一个。',
  },
  sockets: (k) => `主机上已有的套接字，按 bind() 顺序排列（内核 ${k}）：`,
  socket: (n) => `套接字 ${n}`,
  newSocket: '新套接字',
  newCalls: '调用 bind()（尚未 listen()）',
  on: '已设置',
  off: '未设置',
  uid: 'UID',
  state: { listen: '监听中', bound: '已绑定', time_wait: 'TIME_WAIT 状态', connected: '已连接' },
  outcome: {
    success: 'bind() 成功',
    EADDRINUSE: 'EADDRINUSE（地址已被占用）',
    EINVAL: 'EINVAL（参数无效）',
    ENOMEM: 'ENOMEM（内存不足）',
    EBADF: 'EBADF（文件描述符无效）',
    EOPNOTSUPP: 'EOPNOTSUPP（不支持该操作）',
    ENOPROTOOPT: 'ENOPROTOOPT（协议不支持该选项）',
    EISCONN: 'EISCONN（已经连接）',
    ENOTCONN: 'ENOTCONN（尚未连接）',
    ENETUNREACH: 'ENETUNREACH（网络不可达）',
    ENODEV: 'ENODEV（没有这个设备）',
  },
  synRight: (l) => `答对了：这个 SYN 到达监听套接字 ${l}。`,
  synWrong: (c, l) => `答错了：你选了监听套接字 ${c}，而这个 SYN 到达的是监听套接字 ${l}。`,
  bindRight: (o) => `答对了：${o}。`,
  bindWrong: (c, o) => `答错了：你选了“${c}”，正确答案是“${o}”。`,
  yourAnswer: '你的答案',
  rightAnswer: '正确答案',
  recapRight: (a) => `（正确答案：${a}）`,
  conflicts: (s) => `它与套接字 ${s} 冲突。`,
  conflictBadge: '冲突',
  noConflict: '没有已绑定的套接字拒绝它：这个端口上没有地址重叠，或者每处重叠都被双方设置的选项所允许。',
  why: '内核是怎样选择的',
  next: '下一题',
  finish: '查看得分',
  done: '完成',
  final: (s, n) => `${n} 题中你答对了 ${s} 题。`,
  again: '再做一遍',
  fresh: '换一组题',
  card: { kernel: (s) => `内核：${s}`, fallback: (s) => `回退：${s}`, caveats: '注意事项' },
  workload: (title, w, c, n, k) =>
    `${title}：${c} 个 CPU 上 ${w} 个工作进程，共 ${n.toLocaleString('zh-CN')} 个连接，Linux ${k}。模拟器用下面某一种 accept 模型跑了这组负载。`,
  simSeed: (s) => `模拟器种子 ${s}`,
  simulating: (d, n) => `正在模拟第 ${d + 1} 次运行，共 ${n} 次……`,
  simStopped: '题目准备好之前模拟就停止了。',
  modelRight: (m) => `答对了：${m}。`,
  modelWrong: (c, m) => `答错了：你选了“${c}”，这张直方图来自“${m}”。`,
  sameWorkload: '同一组负载、同一个种子，在每个选项下的结果：',
  shownRun: '题目中的那次运行',
  tell: {
    blocking: '阻塞的 accept() 唤醒等待最久的工作进程，连接依次轮流分给各个工作进程，直方图很平均。',
    epoll: '普通 epoll 每来一个连接就唤醒所有空闲的工作进程，只有一个抢到：分布比较均匀，但大多数唤醒都是无效唤醒（惊群效应）。',
    'epoll-exclusive':
      'EPOLLEXCLUSIVE 只唤醒等待队列上第一个空闲的等待者，所以排在前面的工作进程拿得最多：直方图呈阶梯状下降，负载轻时几乎全给了一个工作进程。',
    'accept-mutex': 'nginx 的 accept_mutex 同一时刻只让一个工作进程接受连接，其余的 500 毫秒后再试：各工作进程的数量不均，尾延迟高达数百毫秒。',
    reuseport:
      'SO_REUSEPORT 给每个工作进程一个独立的队列，按四元组哈希选择：没有无效唤醒，各工作进程的数量只能和哈希一样均匀；慢的或停住的工作进程照样分到同样多的连接，所以尾延迟变大。',
    'reuseport-incoming-cpu': 'SO_INCOMING_CPU 把连接交给绑定在接收该连接的 CPU 上的监听套接字：分布跟随接收 CPU 的分布。',
    'reuseport-bpf-cpu': '按 CPU 选择监听套接字的 BPF 程序，使连接的分布与接收 CPU 的分布一致。',
    'reuseport-least-loaded': '“最少负载”的 BPF 程序选队列最短的监听套接字：没有无效唤醒，慢的或停住的工作进程分到的连接更少。',
  },
};

/** The words for the page's language. */
export function exerciseText(lang = document.documentElement.lang): ExerciseText {
  return langOf(lang) === 'zh-CN' ? zh : en;
}

/** Both languages, for tests. */
export const EXERCISE_TEXT = { en, zh } as const;
