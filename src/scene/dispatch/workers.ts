/**
 * The workers behind the listeners: how fast each one takes connections off
 * its accept queue. This is workload, not a kernel rule (the kernel only
 * queues; a worker's accept() loop empties the queue), so it lives in the
 * scene. Which listener a connection reaches is always the model's answer.
 *
 * Each worker accepts `headroom × fair share × its service rate` connections
 * per simulated second, where the fair share is the arrival rate over the
 * listening members; a stalled worker accepts nothing. No backlog limit is
 * drawn: a stalled worker's queue grows without bound here, where the kernel
 * would drop SYNs once `sk_acceptq_is_full` (net/ipv4/tcp_input.c).
 */

/** Lowest and highest service rate a worker can be given (a multiple of the normal rate). */
export const RATE_BOUNDS = { lo: 0.1, hi: 4 } as const;

/** A `rates` list that was refused, and why. */
export interface RatesError {
  /** The entry (1-based) that was wrong, or 0 for the list as a whole (then `value` is its number of entries). */
  entry: number;
  value: string;
}

/**
 * Reads a service-rate list such as `"1,1,0.5,1"`: entry i is worker i's
 * (listener i's) rate as a multiple of the normal one, from
 * {@link RATE_BOUNDS}.lo to .hi; workers past the list keep 1.
 */
export function parseRates(text: string, max = 1024): { rates: number[] } | { error: RatesError } {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.length > max) return { error: { entry: 0, value: String(parts.length) } };
  const rates: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    const n = /^\d+(\.\d+)?$|^\.\d+$/.test(p) ? Number(p) : NaN;
    if (!(n >= RATE_BOUNDS.lo && n <= RATE_BOUNDS.hi)) return { error: { entry: i + 1, value: p } };
    rates.push(n);
  }
  return { rates };
}

/** The list as an attribute value, or null when every worker has the normal rate. */
export function formatRates(rates: readonly number[]): string | null {
  let end = rates.length;
  while (end > 0 && rates[end - 1] === 1) end--;
  return end === 0
    ? null
    : rates
        .slice(0, end)
        .map((r) => String(r))
        .join(',');
}

/** What one worker does now. */
export interface WorkerState {
  /** Service rate as a multiple of the normal one (1 = normal). */
  rate: number;
  stalled: boolean;
}

/**
 * Connections worker `l` accepts per simulated second: `headroom` times its
 * fair share (`arrivals / listening`) times its rate; 0 when stalled.
 */
export function acceptRate(arrivals: number, listening: number, headroom: number, w: WorkerState): number {
  if (w.stalled) return 0;
  return ((arrivals * headroom) / Math.max(1, listening)) * w.rate;
}

/**
 * Empties the queues of the listening `rows` for `dt` simulated seconds, each
 * at its worker's {@link acceptRate}; adds what each took to `accepted`.
 * Queues hold fractions (a worker is part way through its next accept).
 */
export function drainQueues(
  queue: number[],
  accepted: number[],
  rows: readonly number[],
  arrivals: number,
  headroom: number,
  worker: (l: number) => WorkerState,
  dt: number,
): void {
  for (const l of rows) {
    const q = queue[l] ?? 0;
    const take = Math.min(q, acceptRate(arrivals, rows.length, headroom, worker(l)) * dt);
    queue[l] = q - take;
    accepted[l] = (accepted[l] ?? 0) + take;
  }
}

/** A short tag for a worker's state, in the scene's labels: `stalledWord` (×0), "×0.5", or "" for normal. */
export function workerTag(w: WorkerState, stalledWord: string): string {
  if (w.stalled) return stalledWord;
  return w.rate === 1 ? '' : `×${w.rate}`;
}
