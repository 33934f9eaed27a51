/** The "Your server" widget's interface words, once per language (chosen from the page's `lang`). */
import { langOf } from '../model/messages';
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

const fmt = (lang: string, x: number, digits = 0) => x.toLocaleString(lang, { maximumFractionDigits: digits });

const en: ServerText = {
  headings: {
    verdict: 'Verdict',
    evidence: 'Evidence',
    readMore: 'Read more:',
    sockets: 'Listening sockets',
    workers: 'Connections per worker',
    queues: 'Accept queues over time',
  },
  input: 'Paste ss -tanpe (or ss -ltnpe and ss -tnpe), an observe report, or one count per worker',
  inputHint: 'Run as root so that ss shows every process. Nothing leaves your browser.',
  file: 'Or open a file',
  kernel: 'Kernel',
  kernelHint: 'uname -r on the server, or a release such as 6.1',
  port: 'Port',
  portHint: 'Empty: the listening port most connections reach',
  portBad: 'The port is a number from 1 to 65535.',
  diagnose: 'Diagnose',
  search: 'Find the key',
  stop: 'Stop',
  socketsCaption: 'Each listening socket on the port, the processes holding it, and its accept queue',
  socketsHead: ['Socket (inode)', 'Address', 'Held by', 'Accepting', 'Queue / backlog', 'Slot in socks[]'],
  workersCaption: 'Connections each worker holds, and the slot of socks[] it accepts from under the key found',
  workersHead: ['Worker', 'Connections', 'Slot'],
  workersChart: 'Connections per worker, against the range hashing gives one worker (shaded: 5th to 95th percentile; dashed: the mean)',
  workersAxis: 'worker (pid)',
  queueChart: 'Accept queue of each listener at each sample; seconds across',
  queueNote: (id, peak) => `In colour: listener ${id}, the deepest queue (${peak.toLocaleString('en')} at most); the others in grey. Seconds across.`,
  worker: (comm, pid) => (comm ? `${comm} ${pid}` : String(pid)),
  slot: (s) => (s === null ? '?' : String(s)),
  unknown: '?',
  keyFound: (iv, n, e) =>
    `The per-boot key is ${iv}: found from ${n} connections and their owners, with ${e.toExponential(1)} other keys expected to fit by chance.`,
  agreement: (a, n) => `The model, under that key, sends ${a} of ${n} connections to the worker that holds them.`,
  percentile: (p, boots) => `The spread over workers is more skewed than ${fmt('en', p, 1)}% of ${boots} simulated boots of these same clients.`,
  expectedEmpty: (e, n) =>
    e < 0.005
      ? `Hashing these clients all but never leaves one of the ${n} workers empty.`
      : `Hashing these clients leaves ${fmt('en', e, 2)} of ${n} workers empty on average.`,
  band: (p5, p95, n, total) =>
    `For ${total.toLocaleString('en')} connections over ${n} workers, ` +
    `hashing gives one worker between ${p5.toLocaleString('en')} and ${p95.toLocaleString('en')} (5th–95th percentile).`,
  reason: (r: Reason) => {
    switch (r.kind) {
      case 'no-owners':
        return 'No connection shows its owner: run ss with -p, as root, so that each connection names its worker.';
      case 'no-connections':
        return 'No established connection to this port was pasted: add ss -tnpe (or use ss -tanpe).';
      case 'one-process':
        return `One process (${r.pid}) holds every socket and connection: its threads share them, and no socket table says which thread accepted what.`;
      case 'refused':
        return `The key search cannot run for this group: ${r.why}`;
      case 'labels':
        return `The owners cannot be matched to listeners: ${r.why}`;
      case 'not-searched':
        return 'The key has not been searched for: Find the key searches every key in this browser.';
      case 'no-key-fits':
        return `No key sends these ${r.connections} connections to their owners' listeners: something other than the hash placed them.`;
      case 'ambiguous':
        return `${r.candidates} keys fit these connections${r.moreNeeded !== null ? `; about ${r.moreNeeded} more connections would pin one` : ''}.`;
      case 'several-groups':
        return `Several groups share the port (${r.addresses.join(', ')}); the one most connections reach is diagnosed.`;
    }
  },
  oneSocket: (h, a, n) => `One listening socket on the port, held by ${h} processes; ${a} of them accepted the ${n} connections.`,
  countsVerdict: (c: CountsDiagnosis) => {
    switch (c.verdict) {
      case 'few-clients':
        return (
          `Too few connections for any hash to spread: with ${c.total} over ${c.workers} workers, ` +
          `about ${fmt('en', c.expectedEmpty, 1)} workers stay empty whatever the key.`
        );
      case 'beyond-hash':
        return (
          `Hashing does not give this: the busiest worker has ${fmt('en', c.observed.maxShare * 100, 1)}% of ${c.total.toLocaleString('en')} connections, ` +
          `where hashing's busiest has at most ${c.maxP999.toLocaleString('en')} in 999 boots of 1000. ` +
          'Something other than the reuseport hash decides who accepts.'
        );
      default:
        return (
          `Hashing explains these counts: over ${c.total.toLocaleString('en')} connections and ${c.workers} workers, ` +
          `a spread like this or wider comes up in ${fmt('en', c.pValue * 100, 1)}% of boots.`
        );
    }
  },
  countsShape: (c) =>
    ({
      even: 'Shape: within what hashing gives.',
      'one-dominant':
        'Shape: one worker takes half or more. A shared socket whose waiters are woken last-in first-out ' +
        '(epoll with EPOLLEXCLUSIVE, or one busy worker looping on accept) makes this.',
      'idle-workers': 'Shape: some workers got none while others got many: workers that never accept (stopped, or not listening), or a shared socket.',
      uneven: 'Shape: uneven beyond hashing without one dominant worker: long-lived connections, a slow worker or a program steering traffic.',
    })[c.shape],
  link: {
    'hash/': 'the hash and its skew',
    'reloads/': 'reloads and restarts',
    'steering/': 'steering programs',
    'accept-models/': 'accept models',
    'servers/': 'turning it on in your server',
    'diagnose/': 'what this verdict means',
    'scenarios/six-connections/': 'scenario: six connections',
    'scenarios/long-lived-favourite/': 'scenario: the long-lived favourite',
    'scenarios/shared-queue-under-load/': 'scenario: a shared queue under load',
    'scenarios/stalled-worker/': 'scenario: a stalled worker',
    'scenarios/few-clients/': 'scenario: few clients',
  },
  readSockets: (r) =>
    `Read ${r.snapshot.listeners.length} listening socket${r.snapshot.listeners.length === 1 ? '' : 's'} ` +
    `and ${r.snapshot.connections.length} connection${r.snapshot.connections.length === 1 ? '' : 's'} ` +
    `on ${r.snapshot.proto.toUpperCase()} port ${r.snapshot.port}` +
    (r.listeningPorts.length > 1 ? ` (ports listening in the paste: ${r.listeningPorts.join(', ')})` : '') +
    (r.duplicates ? `; ${r.duplicates} lines repeated a socket already read` : '') +
    (r.other ? `; ${r.other} lines of other ports or states left aside` : '') +
    '.',
  readCounts: (n) => `Read ${n} per-worker counts. Without the connections themselves the key cannot be searched; the counts are judged by their total.`,
  readReport: (k) => `Read a reuseport-agent observe report${k ? ` from kernel ${k}` : ''}.`,
  noOwners: 'No socket shows its owner: run ss with -p (and as root) so that each line names its process.',
  badLines: (n, first) => `${n} line${n === 1 ? '' : 's'} could not be read (the first is line ${first}): run ss with -n, as ss -tanpe.`,
  searchOffer: (c, l, m) =>
    `The per-boot key can be found from ${c} connections of ${l} workers over ${m} listeners: ` +
    'every one of the 2³² keys is tried in this browser, one Web Worker per core, with the time left shown as it goes.',
  searching: (p, eta) => `Searching the keys: ${fmt('en', p, 0)}%${eta !== undefined ? `, about ${Math.ceil(eta)} s left` : ''}`,
  searched: (s, c) => `Searched all 2³² keys in ${fmt('en', s, 1)} s: ${c === 1 ? 'one key fits' : `${c.toLocaleString('en')} keys fit`}.`,
  stopped: 'Stopped: the diagnosis below is without the key.',
  reportKey: 'The key from the report, checked by the model against every connection.',
  failed: (m) => `The diagnosis failed: ${m}`,
  fileTooBig: (b) => `The file is ${b.toLocaleString('en')} bytes; at most 64 MB is read.`,
};

const zh: ServerText = {
  headings: {
    verdict: '结论',
    evidence: '依据',
    readMore: '延伸阅读：',
    sockets: '监听套接字',
    workers: '各工作进程的连接数',
    queues: '各全连接队列随时间的变化',
  },
  input: '粘贴 ss -tanpe 的输出（或 ss -ltnpe 与 ss -tnpe 两者）、observe 报告，或每个工作进程一个连接数',
  inputHint: '请以 root 身份运行，ss 才会列出所有进程。数据不会离开你的浏览器。',
  file: '或打开文件',
  kernel: '内核',
  kernelHint: '服务器上 uname -r 的输出，或 6.1 这样的版本号',
  port: '端口',
  portHint: '留空：取大多数连接所到达的监听端口',
  portBad: '端口应为 1 到 65535 之间的数字。',
  diagnose: '诊断',
  search: '求出密钥',
  stop: '停止',
  socketsCaption: '该端口上的每个监听套接字、持有它的进程，以及它的全连接队列',
  socketsHead: ['套接字（inode）', '地址', '持有进程', '在其上 accept 的进程', '队列 / backlog', 'socks[] 中的槽位'],
  workersCaption: '每个工作进程持有的连接数，以及在求出的密钥下它从 socks[] 的哪个槽位 accept',
  workersHead: ['工作进程', '连接数', '槽位'],
  workersChart: '各工作进程的连接数，背景为哈希分给单个工作进程的范围（阴影：第 5 至第 95 百分位；虚线：均值）',
  workersAxis: '工作进程（pid）',
  queueChart: '每次采样时各监听套接字的全连接队列长度；横轴为秒',
  queueNote: (id, peak) => `彩色线：监听套接字 ${id}，队列最深（最多 ${peak.toLocaleString('zh-CN')}）；其余为灰色。横轴为秒。`,
  worker: (comm, pid) => (comm ? `${comm} ${pid}` : String(pid)),
  slot: (s) => (s === null ? '?' : String(s)),
  unknown: '?',
  keyFound: (iv, n, e) => `本次启动的密钥是 ${iv}：由 ${n} 个连接及其所属进程求出，偶然也符合的其他密钥预计有 ${e.toExponential(1)} 个。`,
  agreement: (a, n) => `在该密钥下，模型把 ${n} 个连接中的 ${a} 个分给了实际持有它们的工作进程。`,
  percentile: (p, boots) => `这些客户端在各工作进程间的分布，比模拟的 ${boots} 次启动中 ${fmt('zh-CN', p, 1)}% 的情形更偏斜。`,
  expectedEmpty: (e, n) =>
    e < 0.005
      ? `对这些客户端做哈希，${n} 个工作进程几乎不会有分不到连接的。`
      : `对这些客户端做哈希，${n} 个工作进程中平均有 ${fmt('zh-CN', e, 2)} 个分不到连接。`,
  band: (p5, p95, n, total) =>
    `${total.toLocaleString('zh-CN')} 个连接分给 ${n} 个工作进程时，` +
    `哈希分给单个工作进程的连接数在 ${p5.toLocaleString('zh-CN')} 到 ${p95.toLocaleString('zh-CN')} 之间（第 5 至第 95 百分位）。`,
  reason: (r: Reason) => {
    switch (r.kind) {
      case 'no-owners':
        return '没有哪个连接显示其所属进程：请以 root 身份运行带 -p 的 ss，让每个连接都标出它的工作进程。';
      case 'no-connections':
        return '没有粘贴到这个端口上的已建立连接：请补上 ss -tnpe 的输出（或改用 ss -tanpe）。';
      case 'one-process':
        return `所有套接字和连接都由同一个进程（${r.pid}）持有：它的线程共用这些套接字，而套接字表看不出是哪个线程 accept 了哪个连接。`;
      case 'refused':
        return `无法为这个组搜索密钥：${r.why}`;
      case 'labels':
        return `无法把这些进程与监听套接字对应起来：${r.why}`;
      case 'not-searched':
        return '尚未搜索密钥：点击“求出密钥”，会在本浏览器中尝试所有密钥。';
      case 'no-key-fits':
        return `没有哪个密钥能把这 ${r.connections} 个连接都分给其所属进程的监听套接字：决定连接去向的不是哈希。`;
      case 'ambiguous':
        return `有 ${r.candidates} 个密钥都符合这些连接${r.moreNeeded !== null ? `；再有约 ${r.moreNeeded} 个连接即可确定唯一的密钥` : ''}。`;
      case 'several-groups':
        return `该端口上有多个组（${r.addresses.join('、')}）；这里诊断的是大多数连接所到达的那个。`;
    }
  },
  oneSocket: (h, a, n) => `该端口上只有一个监听套接字，由 ${h} 个进程持有；其中 ${a} 个进程 accept 了这 ${n} 个连接。`,
  countsVerdict: (c: CountsDiagnosis) => {
    switch (c.verdict) {
      case 'few-clients':
        return `连接太少，任何哈希都分散不开：${c.total} 个连接分给 ${c.workers} 个工作进程，无论密钥如何，平均约有 ${fmt('zh-CN', c.expectedEmpty, 1)} 个工作进程分不到连接。`;
      case 'beyond-hash':
        return (
          `哈希不会给出这样的分布：最忙的工作进程拿到了 ${c.total.toLocaleString('zh-CN')} 个连接中的 ${fmt('zh-CN', c.observed.maxShare * 100, 1)}%，` +
          `而 1000 次启动中有 999 次，哈希给最忙工作进程的连接都不超过 ${c.maxP999.toLocaleString('zh-CN')} 个。决定由谁 accept 的不是 reuseport 哈希。`
        );
      default:
        return `哈希可以解释这些数字：${c.total.toLocaleString('zh-CN')} 个连接分给 ${c.workers} 个工作进程，有 ${fmt('zh-CN', c.pValue * 100, 1)}% 的启动会出现这样或更不均的分布。`;
    }
  },
  countsShape: (c) =>
    ({
      even: '形态：在哈希给出的范围之内。',
      'one-dominant':
        '形态：一个工作进程拿走一半或更多。多个进程共用一个套接字、且按后进先出唤醒等待者时（带 EPOLLEXCLUSIVE 的 epoll，或某个忙碌的工作进程循环 accept），就会这样。',
      'idle-workers': '形态：有的工作进程一个也没拿到，有的却拿了很多：有工作进程从不 accept（被停止或没有监听），或者共用了一个套接字。',
      uneven: '形态：不均程度超出哈希，但没有某个工作进程独占：长连接、变慢的工作进程，或有程序在引导流量。',
    })[c.shape],
  link: {
    'hash/': '哈希及其偏斜',
    'reloads/': '重载与重启',
    'steering/': '引导流量的程序',
    'accept-models/': 'accept 模型',
    'servers/': '在你的服务器中启用',
    'diagnose/': '这个结论的含义',
    'scenarios/six-connections/': '场景：六个连接',
    'scenarios/long-lived-favourite/': '场景：长连接偏爱',
    'scenarios/shared-queue-under-load/': '场景：高负载下的共享队列',
    'scenarios/stalled-worker/': '场景：停顿的工作进程',
    'scenarios/few-clients/': '场景：客户端太少',
  },
  readSockets: (r) =>
    `在 ${r.snapshot.proto.toUpperCase()} 端口 ${r.snapshot.port} 上读到 ${r.snapshot.listeners.length} 个监听套接字和 ${r.snapshot.connections.length} 个连接` +
    (r.listeningPorts.length > 1 ? `（粘贴内容中处于监听状态的端口：${r.listeningPorts.join('、')}）` : '') +
    (r.duplicates ? `；${r.duplicates} 行与已读到的套接字重复` : '') +
    (r.other ? `；另有 ${r.other} 行属于其他端口或其他状态，未计入` : '') +
    '。',
  readCounts: (n) => `读到 ${n} 个工作进程的连接数。没有连接本身就无法搜索密钥；这里按总数来判断这些数字。`,
  readReport: (k) => `读到一份 reuseport-agent observe 报告${k ? `（内核 ${k}）` : ''}。`,
  noOwners: '没有哪个套接字显示其所属进程：请以 root 身份运行带 -p 的 ss，让每一行都标出进程。',
  badLines: (n, first) => `有 ${n} 行无法读取（第一行是第 ${first} 行）：请用带 -n 的 ss，例如 ss -tanpe。`,
  searchOffer: (c, l, m) =>
    `可以由 ${l} 个工作进程的 ${c} 个连接（共 ${m} 个监听套接字）求出本次启动的密钥：在本浏览器中逐一尝试全部 2³² 个密钥，每个 CPU 核一个 Web Worker，运行时会显示剩余时间。`,
  searching: (p, eta) => `正在搜索密钥：${fmt('zh-CN', p, 0)}%${eta !== undefined ? `，约剩 ${Math.ceil(eta)} 秒` : ''}`,
  searched: (s, c) => `已在 ${fmt('zh-CN', s, 1)} 秒内搜索全部 2³² 个密钥：${c === 1 ? '恰有一个密钥符合' : `有 ${c.toLocaleString('zh-CN')} 个密钥符合`}。`,
  stopped: '已停止：下面的诊断没有用到密钥。',
  reportKey: '使用报告中的密钥，并由模型逐个连接核对。',
  failed: (m) => `诊断失败：${m}`,
  fileTooBig: (b) => `文件有 ${b.toLocaleString('zh-CN')} 字节；最多读取 64 MB。`,
};

/** The words for a page language (`zh…` reads Chinese, anything else English). */
export function serverText(lang: string): ServerText {
  return langOf(lang) === 'zh-CN' ? zh : en;
}

export const SERVER_TEXT = { en, zh } as const;
