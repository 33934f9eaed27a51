/**
 * A measured trace as display data: per-listener counts against the uniform
 * expectation, the model's agreement, and rows for one page of the table.
 * Pure: no DOM, no model calls (the predictions come in).
 */
import { Predicted, type Trace } from '../model/trace';

/** Events `reuseport-agent verify` spends on recovering the key (its `--train` default). */
export const TRAIN_EVENTS = 48;

/** Agreement over a range of events. */
export interface Agreement {
  /** Events the model predicted (its answer did not need an unknown key). */
  predicted: number;
  /** Of those, equal to the kernel's choice. */
  agreed: number;
  /** Events whose answer needs the key. */
  needsKey: number;
}

/** One listener's bar. */
export interface ListenerBar {
  listener: number;
  /** Events the kernel gave it. */
  count: number;
  /** Share of all events, 0..1. */
  share: number;
}

/** Counts per listener (or worker) against an even split over the open ones. */
export interface Spread {
  events: number;
  bars: ListenerBar[];
  /** Events per open listener under a uniform spread. */
  expected: number;
  /** Largest / smallest count among open listeners (Infinity when one got none). */
  maxOverMin: number;
}

/** The summary of a trace and its predictions. */
export interface TraceSummary extends Spread {
  /** Over every event. */
  all: Agreement;
  /** Over the events after the first {@link TRAIN_EVENTS} (what `verify --trace` checks). */
  heldOut: Agreement;
}

/** `counts[i]` events went to listener `i`; the `closed` ones are left out of the even split. */
export function spread(counts: readonly number[], closed: ReadonlySet<number> = new Set()): Spread {
  const n = counts.reduce((x, y) => x + y, 0);
  const open = counts.filter((_, l) => !closed.has(l));
  const min = Math.min(...open);
  const max = Math.max(...open);
  return {
    events: n,
    bars: counts.map((count, listener) => ({ listener, count, share: n ? count / n : 0 })),
    expected: open.length ? n / open.length : 0,
    maxOverMin: min === 0 ? Infinity : max / min,
  };
}

function agreement(trace: Trace, pred: Int32Array, from: number): Agreement {
  let predicted = 0;
  let agreed = 0;
  let needsKey = 0;
  for (let i = from; i < pred.length; i++) {
    const p = pred[i]!;
    if (p === Predicted.NeedsKey) needsKey++;
    else {
      predicted++;
      if (p === trace.events[i]!.listener) agreed++;
    }
  }
  return { predicted, agreed, needsKey };
}

/** Summarises `trace` and the model's `pred` (one entry per event, or undefined before predicting). */
export function summarize(trace: Trace, pred?: Int32Array): TraceSummary {
  const n = trace.events.length;
  const counts = new Array<number>(trace.group.listeners).fill(0);
  for (const e of trace.events) if (e.listener < counts.length) counts[e.listener]!++;
  const none: Agreement = { predicted: 0, agreed: 0, needsKey: 0 };
  return {
    ...spread(counts, new Set(trace.group.closed ?? [])),
    events: n,
    all: pred ? agreement(trace, pred, 0) : none,
    heldOut: pred ? agreement(trace, pred, Math.min(TRAIN_EVENTS, n)) : none,
  };
}

/** One table row. */
export interface TraceRow {
  index: number;
  seq: number;
  tuple: string;
  cpu: number | null;
  kernel: number;
  /** The model's listener, or null when it needs the key; -1: no socket. */
  model: number | null;
  agrees: boolean | null;
}

/** Rows `from..from+size` (or only the disagreements, when `onlyMismatches`). */
export function rows(trace: Trace, pred: Int32Array | undefined, from: number, size: number, onlyMismatches = false): { rows: TraceRow[]; total: number } {
  const pick: number[] = [];
  if (onlyMismatches && pred) {
    for (let i = 0; i < pred.length; i++) if (pred[i]! >= -1 && pred[i] !== trace.events[i]!.listener) pick.push(i);
  }
  const total = onlyMismatches ? pick.length : trace.events.length;
  const out: TraceRow[] = [];
  for (let k = from; k < Math.min(total, from + size); k++) {
    const i = onlyMismatches ? pick[k]! : k;
    const e = trace.events[i]!;
    const p = pred?.[i];
    const model = p === undefined || p === Predicted.NeedsKey ? null : p;
    const v6 = e.saddr.includes(':');
    const ep = (a: string, port: number) => (v6 ? `[${a}]:${port}` : `${a}:${port}`);
    out.push({
      index: i,
      seq: e.seq ?? i,
      tuple: `${ep(e.saddr, e.sport)} → ${ep(e.daddr, e.dport)}`,
      cpu: e.cpu ?? null,
      kernel: e.listener,
      model,
      agrees: model === null ? null : model === e.listener,
    });
  }
  return { rows: out, total };
}
