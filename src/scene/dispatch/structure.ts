/**
 * The static part of the scene as plain data (labels, rows, bands, the
 * capacity of socks[]), from the model's group state. No DOM, and no words of
 * its own: the headings are said by the catalogue the caller passes.
 */
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

/** The scene's rows and columns from the model's group state; the headings in `t`'s words (the page's catalogue). */
export function structure(sim: DispatchSim, t: StructureText): Structure {
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
