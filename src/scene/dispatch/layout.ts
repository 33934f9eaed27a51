/**
 * Where things are, in normalised scene coordinates (x and y in [0, 1]):
 * clients on the left, the hash range in the middle (cut into N equal
 * bands, one per slot), `socks[]`, then the listeners with their accept
 * queues on the right. Pure functions: the renderer scales them to pixels.
 */

/** Column positions. */
export const COL = { client: 0.04, lookup: 0.12, hash: 0.36, slot: 0.58, listener: 0.78 } as const;

/** Centre of row `i` of `n` equal rows. */
export function rowCentre(i: number, n: number): number {
  return n <= 0 ? 0.5 : (i + 0.5) / n;
}

/** Where a 32-bit hash sits on the hash range (a display scale: 0 at the top, 2^32 at the bottom). */
export function hashToY(hash: number): number {
  return (hash >>> 0) / 4294967296;
}

/** The edges of `n` equal bands of the hash range, as y positions (n + 1 values). */
export function bandEdges(n: number): number[] {
  return Array.from({ length: n + 1 }, (_, i) => i / n);
}

/** Client `i` of `n`, spread down the left column. */
export function clientY(i: number, n: number): number {
  return rowCentre(i, n);
}

/** A point along a polyline given as [x0, y0, x1, y1, ...] with segment weights, at fraction f in [0, 1]. */
export function along(points: readonly number[], weights: readonly number[], f: number, out: { x: number; y: number }): void {
  const segs = weights.length;
  let total = 0;
  for (const w of weights) total += w;
  let acc = 0;
  const g = Math.min(Math.max(f, 0), 1) * total;
  for (let s = 0; s < segs; s++) {
    const w = weights[s]!;
    if (g <= acc + w || s === segs - 1) {
      const u = w === 0 ? 1 : Math.min(Math.max((g - acc) / w, 0), 1);
      out.x = points[2 * s]! + (points[2 * s + 2]! - points[2 * s]!) * u;
      out.y = points[2 * s + 1]! + (points[2 * s + 3]! - points[2 * s + 1]!) * u;
      return;
    }
    acc += w;
  }
}
