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
  const members = sim.group.members();
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

function pickText(p: SelectionPath, lang: Lang): string {
  if (p.kind === 'by_hash') return `× ${p.numSocks} = 0x${p.productHex}, >> 32 = slot ${p.scaled}`;
  if (p.kind === 'program')
    return `${say(lang, 'program_summary', p.program)}: ${say(lang, 'program_return', p.returned)}${p.then ? `; then ${pickText(p.then, lang)}` : ''}`;
  return `reservoir scan over ${p.steps.length + p.omitted} listeners`;
}

/** The hash marker's label: the model's hash, product and slot for one packet. */
export function markerText(e: Explain, lang: Lang = 'en'): string {
  return `hash 0x${e.hash.hashHex} ${pickText(e.pick, lang)} → ${e.listener === null ? 'no socket' : `L${e.listener}`}`;
}
