/**
 * Fairness figures for the live charts: plain arithmetic on counts the
 * model's answers produced (no kernel rule here).
 */

export interface Fairness {
  total: number;
  /** Listeners counted (n). */
  n: number;
  /** The uniform-hash expectation per listener: total / n. */
  expected: number;
  min: number;
  max: number;
  /** max / min; Infinity when some listener has none while another has some; null with no data. */
  maxMinRatio: number | null;
  /** Jain's index (Σx)² / (n·Σx²), 1 = perfectly even; null with no data. */
  jain: number | null;
}

/** Figures over `counts` (one entry per listening member). */
export function fairness(counts: readonly number[]): Fairness {
  const n = counts.length;
  let total = 0;
  let sq = 0;
  let min = Infinity;
  let max = -Infinity;
  for (const x of counts) {
    total += x;
    sq += x * x;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  if (n === 0) return { total: 0, n: 0, expected: 0, min: 0, max: 0, maxMinRatio: null, jain: null };
  const maxMinRatio = total === 0 ? null : min === 0 ? Infinity : max / min;
  const jain = sq === 0 ? null : (total * total) / (n * sq);
  return { total, n, expected: total / n, min, max, maxMinRatio, jain };
}
