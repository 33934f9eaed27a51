/**
 * Turns the model's `Explain` record into plain display data: titled
 * sections of labelled rows and tables. No DOM, no arithmetic on kernel
 * values: every number shown is one the model reported.
 */
import type { Explain, SelectionPath } from '../model/index';
import type { CbpfRun } from '../model/generated/CbpfRun';
import { say, words, type Lang } from '../model/messages';
import type { Row, Table } from './card';
import { ebpfRunView } from './ebpf-run-view';

export type { Row, Table };

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

/** The card's own words, said by the catalogue (`ui.explain.*`; the model's outcomes are said by {@link say}). */
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
  /** A jhash call's table caption: the function and its role. */
  jhashCaption: (fn: string, role: string) => string;
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

/** The card's words in `lang`, from the catalogue (`ui.explain.*` of messages/*.json). */
function cardWords(lang: Lang): Words {
  const w = words(lang, 'explain');
  return {
    headline: (proto, tuple, release, who, slot, hash) =>
      w.say('headline', { proto, tuple, release, who, slot: slot === null ? '' : w.say('headline_slot', { slot }), hash }),
    noSocket: w.say('no_socket'),
    listener: (n) => w.say('listener', { n }),
    packetGroup: w.say('packet_group'),
    packet: w.say('packet'),
    cpu: w.say('cpu'),
    boundTo: w.say('bound_to'),
    port: (bind, port) => w.say('port', { bind, port }),
    listening: w.say('listening'),
    selection: w.say('selection'),
    byGroup: w.say('by_group'),
    byChain: w.say('by_chain'),
    capacity: w.say('capacity'),
    closedTail: w.say('closed_tail'),
    incomingCpu: w.say('incoming_cpu'),
    hash: (fn) => w.say('hash', { function: fn }),
    formula: w.say('formula'),
    laddr: w.say('laddr'),
    why: w.say('why'),
    jhashCaption: (fn, role) => w.say('jhash_caption', { function: fn, role }),
    jhashHead: w.list('jhash_head', 2) as [string, string],
    added: w.say('added'),
    hashRow: w.say('hash_row'),
    slotTitle: w.say('slot_title'),
    slot: (n) => w.say('slot', { n }),
    visited: w.say('visited'),
    visitedHead: w.list('visited_head', 3) as [string, string, string],
    programTitle: w.say('program_title'),
    program: w.say('program'),
    returned: w.say('returned'),
    outcome: w.say('outcome'),
    reservoirTitle: w.say('reservoir_title'),
    rule: w.say('rule'),
    ruleText: w.say('rule_text'),
    chain: w.say('chain'),
    chainHead: w.list('chain_head', 7),
    chainOmitted: (omitted, shown) => w.say('chain_omitted', { omitted: w.num(omitted), shown }),
    notListed: w.say('not_listed'),
    run: w.say('run'),
    runHead: w.list('run_head', 3) as [string, string, string],
    ended: w.say('ended'),
    end: (e) => {
      switch (e.kind) {
        case 'returned':
          return w.say('end.returned', { value: e.value });
        case 'load_failed':
          return w.say('end.load_failed', { pc: e.pc, size: e.size, offset: e.offset });
        case 'div_by_zero':
          return w.say('end.div_by_zero', { pc: e.pc });
        default:
          return w.say('end.unknown', { pc: e.pc });
      }
    },
  };
}

const WORDS: Readonly<Record<Lang, Words>> = { en: cardWords('en'), 'zh-CN': cardWords('zh-CN') };

const wordsOf = (lang: Lang): Words => WORDS[lang];

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
      caption: w.jhashCaption(c.function, say(lang, 'jhash_role', c.role)),
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
        ...(pick.ebpfRun ? ebpfRunView(pick.ebpfRun, lang).rows : []),
      ],
      tables: pick.run ? [runTable(pick.run, w)] : pick.ebpfRun ? ebpfRunView(pick.ebpfRun, lang).tables : [],
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
