/** The lookup widget's interface words, once per language (chosen from the page's `lang`). */
import { langOf } from '../model/messages';
import type { ExplainCardText } from '../render/explain-card';

export interface LookupText {
  help: string;
  tuples: string;
  kernel: string;
  kernelHint: string;
  /** The profile in use; `basis` is where its rules were read, already said in this language (`sayBasis`). */
  profile: (release: string, basis: string) => string;
  proto: string;
  listeners: string;
  /** `group`: the largest group from 4.6; `chain`: the most listeners the model builds (the model's `maxGroupMembers`, `maxListeners`). */
  listenersHint: (group: number, chain: number) => string;
  bound: string;
  boundHint: string;
  boundPlaceholder: string;
  closed: string;
  closedHint: string;
  cpu: string;
  secret: string;
  secretHint: string;
  newBoot: string;
  inner: string;
  innerHint: string;
  explain: string;
  tooManyLines: (lines: number, max: number) => string;
  listenersBad: string;
  secretBad: string;
  innerBad: string;
  secretMissing: string;
  innerMissing: string;
  underGiven: (v: string) => string;
  underRandom: (v: string) => string;
  closedBad: string;
  cpuBad: string;
  boundBad: (msg: string) => string;
  /** Prefix of {@link boundBad}'s message. */
  boundPrefix: string;
  noTuple: string;
  lineError: (line: number, err: string) => string;
  cannotBuild: (msg: string) => string;
  notAnswered: (n: number) => string;
  explained: (good: number, bad: number) => string;
  /** Answering is under way: `done` of `all` lines. */
  working: (done: number, all: number) => string;
  results: string;
  perListener: string;
  perListenerHead: [string, string];
  none: string;
  chosen: string;
  chosenHead: [string, string, string, string, string];
  firstRows: (n: number) => string;
  detail: (line: number, listener: string) => string;
  detailedFirst: (n: number) => string;
  card: ExplainCardText;
}

const en: LookupText = {
  help:
    'One connection per line: client first. SADDR SPORT DADDR DPORT, or SADDR:SPORT DADDR:DPORT with IPv6 as [addr]:port. ' +
    'Lines starting with # are ignored.',
  tuples: '4-tuples',
  kernel: 'Kernel',
  kernelHint: 'a profile, or your uname -r',
  profile: (r, b) => `Uses profile ${r} (rules from ${b}).`,
  proto: 'Protocol',
  listeners: 'Listeners',
  listenersHint: (group, chain) =>
    `1 to ${group} from 4.6 (the group array), up to ${chain.toLocaleString('en-US')} on a 3.9–4.5 chain; numbered in listen() order (bind() for UDP)`,
  bound: 'Bound address',
  boundHint: 'empty: the destination of the first line; 0.0.0.0 or :: for a wildcard group',
  boundPlaceholder: 'destination of the first line',
  closed: 'Closed listeners',
  closedHint: 'closed in this order after all listened, e.g. 1,3',
  cpu: 'Receiving CPU',
  secret: 'Hash secret (IPv4)',
  secretHint: 'secret + net_hash_mix, 32-bit hex; your kernel draws its own at boot',
  newBoot: 'New boot',
  inner: 'IPv6 inner secret',
  innerHint: 'needed for IPv6 lines; the IPv6 outer value is the secret above',
  explain: 'Explain',
  tooManyLines: (n, max) =>
    `The tuples field has ${n} lines; this step-by-step view explains at most ${max}. Paste many connections into the analyser on the lookup page, ` +
    `which takes a million, or use reuseport-agent predict.`,
  listenersBad: 'Listeners: give a whole number of at least 1.',
  secretBad: 'Hash secret: give a 32-bit hex value such as 0x1a2b3c4d.',
  innerBad: 'IPv6 inner secret: give a 32-bit hex value such as 0x1a2b3c4d.',
  secretMissing: 'Hash secret: give your kernel’s value (reuseport-agent recover finds it), or press “New boot” for a random example.',
  innerMissing: 'IPv6 inner secret: IPv6 lines need it. Give your kernel’s value, or press “New boot” for a random example.',
  underGiven: (v) => `Answers under the secret ${v}.`,
  underRandom: (v) => `Answers under a random boot’s secret ${v}: an example, not your server’s.`,
  closedBad: 'Closed listeners: give listener numbers separated by commas, such as 1,3.',
  cpuBad: 'Receiving CPU: give a whole number from 0.',
  boundBad: (m) => `Bound address: ${m}`,
  boundPrefix: 'Bound address',
  noTuple: 'No line holds a valid tuple, so the group has no address and port: fix the lines below or give a bound address with a port, such as 0.0.0.0:8080.',
  lineError: (l, e) => `Line ${l}: ${e}`,
  cannotBuild: (m) => `The group cannot be built: ${m}`,
  notAnswered: (n) => `${n} line${n === 1 ? '' : 's'} could not be answered:`,
  explained: (g, b) => `${g} line${g === 1 ? '' : 's'} explained${b ? `, ${b} with errors` : ''}.`,
  working: (d, a) => `Explaining: ${d} of ${a} lines…`,
  results: 'Results',
  perListener: 'Connections per listener',
  perListenerHead: ['listener', 'connections'],
  none: 'none',
  chosen: 'Chosen socket per line',
  chosenHead: ['line', 'tuple', 'listener', 'slot', 'hash'],
  firstRows: (n) => `The table shows the first 1000 of ${n} lines.`,
  detail: (l, who) => `Line ${l}: listener ${who}`,
  detailedFirst: (n) => `Full explanations are shown for the first ${n} lines.`,
  card: { kernel: (s) => `Kernel: ${s}`, fallback: (s) => `Fallback: ${s}`, caveats: 'Caveats' },
};

const zh: LookupText = {
  help: '每行一个连接，客户端在前：SADDR SPORT DADDR DPORT，或 SADDR:SPORT DADDR:DPORT，IPv6 写作 [addr]:port。以 # 开头的行会被忽略。',
  tuples: '四元组',
  kernel: '内核',
  kernelHint: '内核配置档，或你的 uname -r 输出',
  profile: (r, b) => `使用内核配置档 ${r}（规则依据：${b}）。`,
  proto: '协议',
  listeners: '监听套接字数',
  listenersHint: (group, chain) =>
    `4.6 起为 1 到 ${group}（组数组），3.9–4.5 的链表最多 ${chain.toLocaleString('en-US')}；按 listen() 顺序编号（UDP 按 bind() 顺序）`,
  bound: '绑定地址',
  boundHint: '留空：使用第一行的目的地址；通配组填 0.0.0.0 或 ::',
  boundPlaceholder: '第一行的目的地址',
  closed: '已关闭的监听套接字',
  closedHint: '全部开始监听后按此顺序关闭，例如 1,3',
  cpu: '接收 CPU',
  secret: '哈希密钥（IPv4）',
  secretHint: 'secret + net_hash_mix，32 位十六进制；你的内核在开机时自行生成',
  newBoot: '模拟重新开机',
  inner: 'IPv6 内层密钥',
  innerHint: 'IPv6 行需要；IPv6 外层值即上面的密钥',
  explain: '解释',
  tooManyLines: (n, max) =>
    `四元组一栏有 ${n} 行；这个逐步解释的视图最多处理 ${max} 行。大量连接请粘贴到“查询”页上方的分析器（可处理一百万行），或使用 reuseport-agent predict。`,
  listenersBad: '监听套接字数：请输入不小于 1 的整数。',
  secretBad: '哈希密钥：请输入 32 位十六进制数，例如 0x1a2b3c4d。',
  innerBad: 'IPv6 内层密钥：请输入 32 位十六进制数，例如 0x1a2b3c4d。',
  secretMissing: '哈希密钥：请填写你内核的值（可用 reuseport-agent recover 求出），或点“模拟重新开机”使用一个随机示例。',
  innerMissing: 'IPv6 内层密钥：IPv6 行需要它。请填写你内核的值，或点“模拟重新开机”使用一个随机示例。',
  underGiven: (v) => `以下结果使用密钥 ${v}。`,
  underRandom: (v) => `以下结果使用一次随机开机的密钥 ${v}：只是示例，不是你服务器上的结果。`,
  closedBad: '已关闭的监听套接字：请输入用逗号分隔的编号，例如 1,3。',
  cpuBad: '接收 CPU：请输入不小于 0 的整数。',
  boundBad: (m) => `绑定地址：${m}`,
  boundPrefix: '绑定地址',
  noTuple: '没有一行是有效的四元组，因此该组没有地址和端口：请修正下面的行，或给出带端口的绑定地址，例如 0.0.0.0:8080。',
  lineError: (l, e) => `第 ${l} 行：${e}`,
  cannotBuild: (m) => `无法建立该组：${m}`,
  notAnswered: (n) => `${n} 行无法给出回答：`,
  explained: (g, b) => `已解释 ${g} 行${b ? `，${b} 行有错误` : ''}。`,
  working: (d, a) => `正在解释：第 ${d} 行，共 ${a} 行……`,
  results: '结果',
  perListener: '各监听套接字的连接数',
  perListenerHead: ['监听套接字', '连接数'],
  none: '无',
  chosen: '每行选中的套接字',
  chosenHead: ['行', '四元组', '监听套接字', '槽位', '哈希'],
  firstRows: (n) => `表中只列出 ${n} 行中的前 1000 行。`,
  detail: (l, who) => `第 ${l} 行：监听套接字 ${who}`,
  detailedFirst: (n) => `只为前 ${n} 行给出完整解释。`,
  card: { kernel: (s) => `内核：${s}`, fallback: (s) => `回退：${s}`, caveats: '注意事项' },
};

/** The words for the page's language. */
export function lookupText(lang = document.documentElement.lang): LookupText {
  return langOf(lang) === 'zh-CN' ? zh : en;
}

/** Both languages, for tests. */
export const LOOKUP_TEXT = { en, zh } as const;
