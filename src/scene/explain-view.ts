/**
 * Turns the model's `Explain` record into plain display data: titled
 * sections of labelled rows and tables. No DOM, no arithmetic on kernel
 * values: every number shown is one the model reported.
 */
import type { Explain, SelectionPath } from '../model/index';
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

/** Builds the display data for one explained packet; the model's outcomes are said in `lang`. */
export function explainView(e: Explain, lang: Lang = 'en'): ExplainView {
  const who = e.listener === null ? 'no socket' : `listener ${e.listener}`;
  const where = e.slot === null ? '' : ` in socks[${e.slot}]`;
  const headline = `${e.proto.toUpperCase()} ${fmtTuple(e)} on kernel ${release(e)}: ${who}${where}, hash ${e.hash.hashHex}.`;

  const packet: Section = {
    title: 'Packet and group',
    rows: [
      { label: 'Packet', value: fmtTuple(e), mono: true },
      { label: 'Receiving CPU', value: String(e.cpu) },
      { label: 'Group bound to', value: `${e.group.bind} port ${e.group.port}`, mono: true },
      { label: 'Listening members', value: String(e.group.listening) },
      { label: 'Selection', value: e.group.selection === 'group' ? 'sock_reuseport group (socks[] array)' : 'reservoir scan over the listener chain (no group yet)' },
    ],
    tables: [],
  };
  if (e.group.maxSocks !== null) packet.rows.push({ label: 'socks[] capacity (max_socks)', value: String(e.group.maxSocks) });
  if (e.group.closedTail > 0) packet.rows.push({ label: 'Closed tail (migration)', value: String(e.group.closedTail) });
  if (e.group.incomingCpu > 0) packet.rows.push({ label: 'Members with SO_INCOMING_CPU', value: String(e.group.incomingCpu) });

  const h = e.hash;
  const hash: Section = {
    title: `Hash: ${h.function}`,
    source: say(lang, 'kernel_source', h.source),
    rows: [
      { label: 'Formula', value: h.formula, mono: true },
      { label: 'Local address hashed', value: h.laddr, mono: true },
      { label: 'Why that address', value: say(lang, 'laddr_reason', h.laddrReason) },
    ],
    tables: h.calls.map((c) => ({
      caption: `${c.function}: ${say(lang, 'jhash_role', c.role)}`,
      head: ['word', 'value (hex, kernel byte order)'],
      rows: [...c.words.map((w, i) => [`${i}`, w]), ['initval', c.initval], ['result', c.result]],
    })),
  };
  if (h.lportAdded !== null) hash.rows.push({ label: 'Added outside the jhash', value: `lport ${h.lportAdded}` });
  hash.rows.push({ label: 'Hash', value: h.hashHex, mono: true });

  const picks = pickSections(e.pick, e, lang);
  const fallback = e.fallback === null ? null : say(lang, 'fallback', e.fallback);
  return { headline, listener: e.listener, slot: e.slot, hashHex: h.hashHex, sections: [packet, hash, ...picks], fallback, notes: e.notes.map((n) => say(lang, 'note', n)) };
}

/** Connections per listener among answered lines, for the summary. */
export function countByListener(listeners: (number | null)[]): { listener: number | null; count: number }[] {
  const m = new Map<number | null, number>();
  for (const l of listeners) m.set(l, (m.get(l) ?? 0) + 1);
  return [...m.entries()].sort((a, b) => (a[0] ?? Infinity) - (b[0] ?? Infinity)).map(([listener, count]) => ({ listener, count }));
}

/** The selection steps as sections: a program, then what it handed over to. */
function pickSections(pick: SelectionPath, e: Explain, lang: Lang): Section[] {
  if (pick.kind === 'by_hash') {
    return [
      {
        title: 'reciprocal_scale and the slot',
        source: say(lang, 'kernel_source', pick.source),
        rows: [
          { label: 'hash × num_socks', value: `0x${e.hash.hashHex} × ${pick.numSocks} = 0x${pick.productHex} (${pick.product})`, mono: true },
          { label: '>> 32', value: `slot ${pick.scaled}`, mono: true },
        ],
        tables: [
          {
            caption: 'Slots visited',
            head: ['slot', 'listener', 'what happened'],
            rows: pick.steps.map((s) => [String(s.slot), String(s.listener), say(lang, 'ring_outcome', s.outcome)]),
            highlight: pick.steps.findIndex((s) => s.chosen),
          },
        ],
      },
    ];
  }
  if (pick.kind === 'program') {
    const own: Section = {
      title: 'Program attached to the group',
      source: say(lang, 'kernel_source', pick.source),
      rows: [
        { label: 'Program', value: say(lang, 'program_summary', pick.program) },
        { label: 'Returned', value: say(lang, 'program_return', pick.returned), mono: true },
        { label: 'Outcome', value: say(lang, 'program_outcome', pick.outcome) },
      ],
      tables: [],
    };
    return pick.then ? [own, ...pickSections(pick.then, e, lang)] : [own];
  }
  return [
    {
      title: 'Reservoir scan over the chain',
      source: say(lang, 'kernel_source', pick.source),
      rows: [{ label: 'Rule', value: 'the first top-scoring socket is taken; each later equal one replaces it when reciprocal_scale(phash, matches) = 0, with phash the hash, then its next_pseudo_random32 steps' }],
      tables: [
        {
          caption: 'Chain, newest listener first',
          head: ['position', 'listener', 'score', 'matches', 'phash', 'scaled', 'what happened'],
          rows: pick.steps.map((s) => [String(s.position), String(s.listener), String(s.score), String(s.matches), s.phash ?? '', s.scaled === null ? '' : String(s.scaled), say(lang, 'reservoir_outcome', s.outcome)]),
          highlight: e.listener === null ? undefined : pick.steps.map((s) => s.taken).lastIndexOf(true),
        },
      ],
    },
  ];
}
