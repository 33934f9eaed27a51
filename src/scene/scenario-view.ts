/**
 * What a scenario card shows, from the model's reports: per-worker accepts
 * (simulated, and measured on a real kernel when a recording exists), the
 * headline figures, and the series over time. Pure data; no words (the
 * island's text tables name the figures) and no arithmetic of the kernel's.
 */
import type { SimReport, Variant } from '../model/sim';

/** The figures a card lists, in order. */
export type FigureKey = 'jain' | 'maxMin' | 'maxShare' | 'p50' | 'p99' | 'stddev' | 'synDrops' | 'reset' | 'migrated' | 'wasted' | 'local';

export interface Figure {
  key: FigureKey;
  sim: number | null;
  measured?: number | null;
}

export interface WorkerBar {
  worker: number;
  sim: number;
  measured?: number;
}

export interface VariantCard {
  variant: Variant;
  partial: boolean;
  workers: WorkerBar[];
  figures: Figure[];
  /** Deepest accept queue per slice, per queue (listener or the shared one). */
  depth: number[][];
  /** Request latency p99 per slice, milliseconds (NaN where no request finished). */
  p99Ms: number[];
  bucketMs: number;
  endMs: number;
}

function figures(r: SimReport): Record<FigureKey, number | null> {
  const arrived = Number(r.outcomes.arrived) || 0;
  return {
    jain: r.skew.jain,
    maxMin: r.skew.maxMin,
    maxShare: r.skew.maxShare,
    p50: r.requestLatency.p50Us / 1e3,
    p99: r.requestLatency.p99Us / 1e3,
    stddev: r.requestLatency.stddevUs / 1e3,
    synDrops: Number(r.outcomes.synDrops),
    reset: Number(r.outcomes.reset),
    migrated: Number(r.outcomes.migrated),
    wasted: r.workers.reduce((a, w) => a + Number(w.wastedWakeups), 0),
    local: arrived ? Number(r.outcomes.local) / arrived : null,
  };
}

const ALWAYS: FigureKey[] = ['jain', 'maxMin', 'maxShare', 'p50', 'p99', 'stddev'];
/** Shown only when some run has a non-zero value: a card lists what happened. */
const WHEN_SEEN: FigureKey[] = ['synDrops', 'reset', 'migrated', 'wasted'];

/** One card per variant; `measured` holds a real kernel's report per variant id, where one was recorded. */
export function scenarioCards(variants: Variant[], reports: (SimReport | undefined)[], measured: Record<string, SimReport> = {}): VariantCard[] {
  const cards: VariantCard[] = [];
  variants.forEach((variant, i) => {
    const r = reports[i];
    if (!r) return;
    const m = measured[variant.id];
    const fs = figures(r);
    const fm = m ? figures(m) : undefined;
    const keys = [...ALWAYS, ...WHEN_SEEN.filter((k) => (fs[k] ?? 0) > 0 || (fm?.[k] ?? 0) > 0)];
    if (variant.accept === 'reuseport-incoming-cpu' || variant.accept === 'reuseport-bpf-cpu' || variants.some((v) => v.accept === 'reuseport-incoming-cpu'))
      keys.push('local');
    cards.push({
      variant,
      partial: r.partial,
      workers: r.workers.map((w, k) => ({ worker: k, sim: Number(w.accepts), ...(m?.workers[k] ? { measured: Number(m.workers[k]!.accepts) } : {}) })),
      figures: keys.map((key) => ({ key, sim: fs[key], ...(fm ? { measured: fm[key] } : {}) })),
      depth: transpose(r.series.depth),
      p99Ms: r.series.p99Us.map((v, b) => (r.series.accepts[b] !== undefined && v > 0 ? v / 1e3 : Number.NaN)),
      bucketMs: r.series.bucketUs / 1e3,
      endMs: r.endUs / 1e3,
    });
  });
  return cards;
}

/** rows[slice][queue] → per queue, the values over slices. */
function transpose(rows: number[][]): number[][] {
  const n = rows.reduce((a, r) => Math.max(a, r.length), 0);
  return Array.from({ length: n }, (_, q) => rows.map((r) => r[q] ?? 0));
}
