/**
 * Turns the model's `Explain` record into plain display data: titled
 * sections of labelled rows and tables. No DOM, no arithmetic on kernel
 * values: every number shown is one the model reported.
 */
import type { Explain, SelectionPath } from '../model/index';
import type { CbpfRun } from '../model/generated/CbpfRun';
import { say, type Lang } from '../model/messages';

/** A labelled value; `mono` marks hex and code. */
export interface Row {
  label: string;
  value: string;
  mono?: boolean;
}

/** A small table. */
export interface Table {
  caption: string;
  head: string[];
  rows: string[][];
  /** Index of the row to highlight (the chosen one), if any. */
  highlight?: number;
}

/** One titled part of the explanation. */
export interface Section {
  title: string;
  rows: Row[];
  tables: Table[];
  /** Kernel source of the step. */
  source?: string;
}

/** The whole explanation, ready to render. */
export interface ExplainView {
  /** One sentence: which socket and why. */
  headline: string;
  listener: number | null;
  slot: number | null;
  hashHex: string;
  sections: Section[];
  fallback: string | null;
  notes: string[];
}

const release = (e: Explain): string => `${e.profile.major}.${e.profile.minor}`;

function fmtTuple(e: Explain): string {
  const { saddr, sport, daddr, dport } = e.tuple;
  const ep = (a: string, p: number) => (a.includes(':') ? `[${a}]:${p}` : `${a}:${p}`);
  return `${ep(saddr, sport)} → ${ep(daddr, dport)}`;
}

/** The card's own words (the model's outcomes come from messages.ts). */
interface Words {
  headline: (proto: string, tuple: string, release: string, who: string, slot: number | null, hash: string) => string;
  noSocket: string;
  listener: (n: number) => string;
  packetGroup: string;
  packet: string;
  cpu: string;
  boundTo: string;
  port: (bind: string, port: number) => string;
  listening: string;
  selection: string;
  byGroup: string;
  byChain: string;
  capacity: string;
  closedTail: string;
  incomingCpu: string;
  hash: (fn: string) => string;
  formula: string;
  laddr: string;
  why: string;
  jhashHead: [string, string];
  added: string;
  hashRow: string;
  slotTitle: string;
  slot: (n: number) => string;
  visited: string;
  visitedHead: [string, string, string];
  programTitle: string;
  program: string;
  returned: string;
  outcome: string;
  reservoirTitle: string;
  rule: string;
  ruleText: string;
  chain: string;
  chainHead: string[];
  /** The chain's listeners the record leaves out: past its first `shown`, those that did not take the lead. */
  chainOmitted: (omitted: number, shown: number) => string;
  notListed: string;
  /** A classic program's run: the instructions taken, with A and X after each. */
  run: string;
  runHead: [string, string, string];
  /** How the run ended. */
  ended: string;
  end: (end: CbpfRun['end']) => string;
}

const EN: Words = {
  headline: (p, t, r, who, slot, hash) => `${p} ${t} on kernel ${r}: ${who}${slot === null ? '' : ` in socks[${slot}]`}, hash ${hash}.`,
  noSocket: 'no socket',
  listener: (n) => `listener ${n}`,
  packetGroup: 'Packet and group',
  packet: 'Packet',
  cpu: 'Receiving CPU',
  boundTo: 'Group bound to',
  port: (b, p) => `${b} port ${p}`,
  listening: 'Listening members',
  selection: 'Selection',
  byGroup: 'sock_reuseport group (socks[] array)',
  byChain: 'reservoir scan over the listener chain (no group yet)',
  capacity: 'socks[] capacity (max_socks)',
  closedTail: 'Closed tail (migration)',
  incomingCpu: 'Members with SO_INCOMING_CPU',
  hash: (f) => `Hash: ${f}`,
  formula: 'Formula',
  laddr: 'Local address hashed',
  why: 'Why that address',
  jhashHead: ['word', 'value (hex, kernel byte order)'],
  added: 'Added outside the jhash',
  hashRow: 'Hash',
  slotTitle: 'reciprocal_scale and the slot',
  slot: (n) => `slot ${n}`,
  visited: 'Slots visited',
  visitedHead: ['slot', 'listener', 'what happened'],
  programTitle: 'Program attached to the group',
  program: 'Program',
  returned: 'Returned',
  outcome: 'Outcome',
  reservoirTitle: 'Reservoir scan over the chain',
  rule: 'Rule',
  ruleText:
    'the first top-scoring socket is taken; each later equal one replaces it when reciprocal_scale(phash, matches) = 0, with phash the hash, then its ' +
    'next_pseudo_random32 steps',
  chain: 'Chain, newest listener first',
  chainHead: ['position', 'listener', 'score', 'matches', 'phash', 'scaled', 'what happened'],
  chainOmitted: (omitted, shown) => `${omitted.toLocaleString('en')} listeners: past the first ${shown}, only those that took the lead are listed`,
  notListed: 'Not listed',
  run: 'Instructions taken',
  runHead: ['instruction', 'A after it', 'X after it'],
  ended: 'Ended',
  end: (e) => {
    switch (e.kind) {
      case 'returned':
        return `ret: returns ${e.value}`;
      case 'load_failed':
        return `instruction ${e.pc} reads ${e.size} byte(s) at offset ${e.offset}, past the end of the data: the program returns 0`;
      case 'div_by_zero':
        return `instruction ${e.pc} divides by X = 0: the program returns 0`;
      default:
        return `instruction ${e.pc} reads a value the model does not hold`;
    }
  },
};

const ZH: Words = {
  headline: (p, t, r, who, slot, hash) => `${p} ${t}，内核 ${r}：${who}${slot === null ? '' : `，位于 socks[${slot}]`}，哈希 ${hash}。`,
  noSocket: '没有套接字',
  listener: (n) => `监听套接字 ${n}`,
  packetGroup: '数据包与组',
  packet: '数据包',
  cpu: '接收 CPU',
  boundTo: '组绑定到',
  port: (b, p) => `${b} 端口 ${p}`,
  listening: '正在监听的成员',
  selection: '选择方式',
  byGroup: 'sock_reuseport 组（socks[] 数组）',
  byChain: '在监听链上做蓄水池扫描（尚未建组）',
  capacity: 'socks[] 容量（max_socks）',
  closedTail: '已关闭的尾部（迁移）',
  incomingCpu: '设置了 SO_INCOMING_CPU 的成员',
  hash: (f) => `哈希：${f}`,
  formula: '公式',
  laddr: '参与哈希的本地地址',
  why: '为何是这个地址',
  jhashHead: ['字', '值（十六进制，内核字节序）'],
  added: '在 jhash 之外加上',
  hashRow: '哈希',
  slotTitle: 'reciprocal_scale 与槽位',
  slot: (n) => `槽位 ${n}`,
  visited: '访问过的槽位',
  visitedHead: ['槽位', '监听套接字', '发生了什么'],
  programTitle: '挂在组上的程序',
  program: '程序',
  returned: '返回值',
  outcome: '结果',
  reservoirTitle: '在链上做蓄水池扫描',
  rule: '规则',
  ruleText:
    '先取第一个得分最高的套接字；之后每个得分相同的套接字，在 reciprocal_scale(phash, matches) = 0 时替换它，其中 phash 起初为哈希值，之后依次为其 next_pseudo_random32 结果',
  chain: '链表，最新的监听套接字在前',
  chainHead: ['位置', '监听套接字', '得分', '匹配数', 'phash', '缩放值', '发生了什么'],
  chainOmitted: (omitted, shown) => `${omitted.toLocaleString('zh-CN')} 个监听套接字：前 ${shown} 个之后，只列出取得领先的那些`,
  notListed: '未列出',
  run: '执行过的指令',
  runHead: ['指令', '执行后的 A', '执行后的 X'],
  ended: '结束方式',
  end: (e) => {
    switch (e.kind) {
      case 'returned':
        return `ret：返回 ${e.value}`;
      case 'load_failed':
        return `第 ${e.pc} 条指令在偏移 ${e.offset} 处读取 ${e.size} 字节，超出了数据末尾：程序返回 0`;
      case 'div_by_zero':
        return `第 ${e.pc} 条指令除以 X = 0：程序返回 0`;
      default:
        return `第 ${e.pc} 条指令读取了模型不掌握的值`;
    }
  },
};

const wordsOf = (lang: Lang): Words => (lang === 'zh-CN' ? ZH : EN);

/** Builds the display data for one explained packet; the model's outcomes are said in `lang`. */
export function explainView(e: Explain, lang: Lang = 'en'): ExplainView {
  const w = wordsOf(lang);
  const who = e.listener === null ? w.noSocket : w.listener(e.listener);
  const headline = w.headline(e.proto.toUpperCase(), fmtTuple(e), release(e), who, e.slot, e.hash.hashHex);

  const packet: Section = {
    title: w.packetGroup,
    rows: [
      { label: w.packet, value: fmtTuple(e), mono: true },
      { label: w.cpu, value: String(e.cpu) },
      { label: w.boundTo, value: w.port(e.group.bind, e.group.port), mono: true },
      { label: w.listening, value: String(e.group.listening) },
      { label: w.selection, value: e.group.selection === 'group' ? w.byGroup : w.byChain },
    ],
    tables: [],
  };
  if (e.group.maxSocks !== null) packet.rows.push({ label: w.capacity, value: String(e.group.maxSocks) });
  if (e.group.closedTail > 0) packet.rows.push({ label: w.closedTail, value: String(e.group.closedTail) });
  if (e.group.incomingCpu > 0) packet.rows.push({ label: w.incomingCpu, value: String(e.group.incomingCpu) });

  const h = e.hash;
  const hash: Section = {
    title: w.hash(h.function),
    source: say(lang, 'kernel_source', h.source),
    rows: [
      { label: w.formula, value: h.formula, mono: true },
      { label: w.laddr, value: h.laddr, mono: true },
      { label: w.why, value: say(lang, 'laddr_reason', h.laddrReason) },
    ],
    tables: h.calls.map((c) => ({
      caption: `${c.function}: ${say(lang, 'jhash_role', c.role)}`,
      head: [...w.jhashHead],
      rows: [...c.words.map((w, i) => [`${i}`, w]), ['initval', c.initval], ['result', c.result]],
    })),
  };
  if (h.lportAdded !== null) hash.rows.push({ label: w.added, value: `lport ${h.lportAdded}` });
  hash.rows.push({ label: w.hashRow, value: h.hashHex, mono: true });

  const picks = pickSections(e.pick, e, lang);
  const fallback = e.fallback === null ? null : say(lang, 'fallback', e.fallback);
  return {
    headline,
    listener: e.listener,
    slot: e.slot,
    hashHex: h.hashHex,
    sections: [packet, hash, ...picks],
    fallback,
    notes: e.notes.map((n) => say(lang, 'note', n)),
  };
}

/** Connections per listener among answered lines, for the summary. */
export function countByListener(listeners: (number | null)[]): { listener: number | null; count: number }[] {
  const m = new Map<number | null, number>();
  for (const l of listeners) m.set(l, (m.get(l) ?? 0) + 1);
  return [...m.entries()].sort((a, b) => (a[0] ?? Infinity) - (b[0] ?? Infinity)).map(([listener, count]) => ({ listener, count }));
}

/** How many of the chain's first listeners the record lists in full (up to the first position it skips). */
function listedInFull(steps: readonly { position: number }[]): number {
  const gap = steps.findIndex((s, i) => s.position !== i);
  return gap === -1 ? steps.length : gap;
}

const hex32 = (v: number): string => `0x${(v >>> 0).toString(16).padStart(8, '0')}`;

/** A classic program's run as the model recorded it: one row per instruction taken. */
function runTable(run: CbpfRun, w: Words): Table {
  return {
    caption: w.run,
    head: [...w.runHead],
    rows: run.steps.map((st) => [String(st.pc), hex32(st.a), hex32(st.x)]),
    highlight: run.steps.length - 1,
  };
}

/** The selection steps as sections: a program, then what it handed over to. */
function pickSections(pick: SelectionPath, e: Explain, lang: Lang): Section[] {
  const w = wordsOf(lang);
  if (pick.kind === 'by_hash') {
    return [
      {
        title: w.slotTitle,
        source: say(lang, 'kernel_source', pick.source),
        rows: [
          { label: 'hash × num_socks', value: `0x${e.hash.hashHex} × ${pick.numSocks} = 0x${pick.productHex} (${pick.product})`, mono: true },
          { label: '>> 32', value: w.slot(pick.scaled), mono: true },
        ],
        tables: [
          {
            caption: w.visited,
            head: [...w.visitedHead],
            rows: pick.steps.map((s) => [String(s.slot), String(s.listener), say(lang, 'ring_outcome', s.outcome)]),
            highlight: pick.steps.findIndex((s) => s.chosen),
          },
        ],
      },
    ];
  }
  if (pick.kind === 'program') {
    const own: Section = {
      title: w.programTitle,
      source: say(lang, 'kernel_source', pick.source),
      rows: [
        { label: w.program, value: say(lang, 'program_summary', pick.program) },
        { label: w.returned, value: say(lang, 'program_return', pick.returned), mono: true },
        { label: w.outcome, value: say(lang, 'program_outcome', pick.outcome) },
        ...(pick.run ? [{ label: w.ended, value: w.end(pick.run.end) }] : []),
      ],
      tables: pick.run ? [runTable(pick.run, w)] : [],
    };
    return pick.then ? [own, ...pickSections(pick.then, e, lang)] : [own];
  }
  return [
    {
      title: w.reservoirTitle,
      source: say(lang, 'kernel_source', pick.source),
      rows: [
        { label: w.rule, value: w.ruleText },
        ...(pick.omitted > 0 ? [{ label: w.notListed, value: w.chainOmitted(pick.omitted, listedInFull(pick.steps)) }] : []),
      ],
      tables: [
        {
          caption: w.chain,
          head: [...w.chainHead],
          rows: pick.steps.map((s) => [
            String(s.position),
            String(s.listener),
            String(s.score),
            String(s.matches),
            s.phash ?? '',
            s.scaled === null ? '' : String(s.scaled),
            say(lang, 'reservoir_outcome', s.outcome),
          ]),
          highlight: e.listener === null ? undefined : pick.steps.map((s) => s.taken).lastIndexOf(true),
        },
      ],
    },
  ];
}
