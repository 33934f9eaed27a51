/**
 * The static part of the scene as plain data (labels, rows, bands, the
 * capacity of socks[]), from the model's group state. No DOM.
 */
import type { Explain, SelectionPath } from '../../model/index';
import { say, type Lang } from '../../model/messages';
import { listenerMark, type FillStyle } from './palette';
import type { DispatchSim } from './sim';
import { workerTag } from './workers';

export interface RowView {
  listener: number;
  /** Slot in socks[] (group era) or chain position (reservoir). */
  index: number;
  label: string;
  colour: string;
  fill: FillStyle;
  /** Current (animated) row centre. */
  y: number;
  queue: number;
  count: number;
  /** SO_INCOMING_CPU, -1 unset. */
  incomingCpu: number;
  /** Its worker's state tag: "" (normal rate), "×0.5", or the word for stalled. */
  tag: string;
  stalled: boolean;
}

export interface Structure {
  selection: 'group' | 'reservoir';
  listening: number;
  /** `max_socks`; null before groups existed. */
  maxSocks: number | null;
  /** Equal bands of the hash range: one per listening member (the `n` of reciprocal_scale). */
  bands: number;
  rows: RowView[];
  /** Client labels when there are few enough to read (at most {@link CLIENT_LABELS}). */
  clientLabels: { label: string; y: number }[];
  headings: { clients: string; hash: string; slots: string; listeners: string };
}

/** Clients are labelled with their address when there are at most this many. */
export const CLIENT_LABELS = 24;

/** The column headings' words. */
export interface StructureText {
  clients: (n: number) => string;
  hashBands: (n: number) => string;
  hashReservoir: string;
  noSocks: string;
  listeners: string;
  /** The word beside a stalled worker's listener. */
  stalled: string;
}

const EN: StructureText = {
  clients: (n) => `Clients (${n})`,
  hashBands: (n) => `Hash range, ${n} bands`,
  hashReservoir: 'Hash (reservoir, no bands)',
  noSocks: 'no socks[] yet',
  listeners: 'Listeners · accept queue',
  stalled: '×0',
};

export function structure(sim: DispatchSim, t: StructureText = EN): Structure {
  const s = sim.summary();
  const members = sim.members();
  const rows = sim.rows.map((l, i) => {
    const m = listenerMark(l);
    return {
      listener: l,
      index: i,
      label: m.label,
      colour: m.colour,
      fill: m.fill,
      y: sim.listenerY(l),
      queue: sim.queue[l] ?? 0,
      count: sim.counts[l] ?? 0,
      incomingCpu: members[l]?.incomingCpu ?? -1,
      tag: workerTag(sim.worker(l), t.stalled),
      stalled: sim.worker(l).stalled,
    };
  });
  const group = s.selection === 'group';
  return {
    selection: s.selection,
    listening: s.listening,
    maxSocks: s.maxSocks,
    bands: group ? s.listening : 0,
    rows,
    clientLabels: sim.clients.length <= CLIENT_LABELS ? sim.clients.map((c, i) => ({ label: `${c.saddr}:${c.sport}`, y: (i + 0.5) / sim.clients.length })) : [],
    headings: {
      clients: t.clients(sim.clients.length),
      hash: group ? t.hashBands(s.listening) : t.hashReservoir,
      slots: group ? `socks[] ${s.listening}/${s.maxSocks}` : t.noSocks,
      listeners: t.listeners,
    },
  };
}

/** The few words of the marker's formula, per language (the numbers and kernel names stay as they are). */
const PICK_WORDS: Record<Lang, { slot: string; thenWord: string; reservoir: (n: number) => string; none: string }> = {
  en: { slot: 'slot', thenWord: 'then', reservoir: (n) => `reservoir scan over ${n} listeners`, none: 'no socket' },
  'zh-CN': { slot: '槽位', thenWord: '然后', reservoir: (n) => `蓄水池扫描 ${n} 个监听套接字`, none: '没有套接字' },
};

function pickText(p: SelectionPath, lang: Lang): string {
  const w = PICK_WORDS[lang];
  if (p.kind === 'by_hash') return `× ${p.numSocks} = 0x${p.productHex}, >> 32 = ${w.slot} ${p.scaled}`;
  if (p.kind === 'program')
    return `${say(lang, 'program_summary', p.program)}: ${say(lang, 'program_return', p.returned)}${p.then ? `; ${w.thenWord} ${pickText(p.then, lang)}` : ''}`;
  return w.reservoir(p.steps.length + p.omitted);
}

/** The hash marker's label: the model's hash, product and slot for one packet. */
export function markerText(e: Explain, lang: Lang = 'en'): string {
  return `hash 0x${e.hash.hashHex} ${pickText(e.pick, lang)} → ${e.listener === null ? PICK_WORDS[lang].none : `L${e.listener}`}`;
}

/** The hash marker's label when no group picked (the reservoir era): the kernel's hash and the listener its scan took. */
export function chainMarkerText(hashHex: string, listener: number | null, listening: number, lang: Lang = 'en'): string {
  return `hash 0x${hashHex} ${PICK_WORDS[lang].reservoir(listening)} → ${listener === null ? PICK_WORDS[lang].none : `L${listener}`}`;
}
