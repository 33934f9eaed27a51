/**
 * A search over the 2^32 per-boot keys in Web Workers, one per core, each
 * over its own part, merged in key order as `reuseport-agent` merges its
 * threads. The paste page's key search (src/model/recover.ts) and the
 * server diagnosis's labelled search (src/model/diagnose.ts) both run on it;
 * the search itself is the model's, in each worker.
 *
 * A worker takes a job with `start`, `end` and `report` (worker 0 reports
 * the plan's figures), and answers with {@link PartReply} messages; the
 * worker side's chunk loop is {@link searchChunks}.
 */

/** The whole key space. */
export const SPACE = 2 ** 32;
/** Keys per chunk: about 10 ms at 0.4 G keys/s. */
const CHUNK = 2 ** 22;
/** Values kept of what fits (as the model's `LIST_CAP`). */
const KEPT = 1000;

/** The part of the key space one worker searches. */
export interface PartJob {
  start: number;
  end: number;
  /** Report the plan's figures (one worker does). */
  report: boolean;
}

/** What a search worker says: its plan's figures, progress, the end, or why it stopped (one message may carry several). */
export interface PartReply<F> {
  plan?: F;
  progress?: number;
  count?: number;
  values?: number[];
  done?: { count: number; values: number[]; unverified: { candidate: number; observation: number } | null };
  error?: { observation?: number; message: string };
}

/** What the workers found together. */
export interface PoolResult<F> {
  plan?: F;
  /** Keys that fit. */
  candidates: number;
  /** The first 1000 of them, increasing. */
  values: number[];
  /** Whether the whole key space was searched. */
  complete: boolean;
  seconds: number;
  keysPerSecond: number;
  workers: number;
  /** Per worker: what it found over how many keys (for a merge elsewhere). */
  parts: { count: number; values: number[]; searched: number }[];
}

/** Progress of a running search. */
export interface PoolProgress<F> {
  searched: number;
  total: number;
  /** Seconds left at the rate so far (undefined until measurable). */
  eta?: number;
  plan?: F;
}

/** An observation the model refused (a contradiction, an impossible listener). */
export class ObservationError extends Error {
  constructor(
    readonly observation: number | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** How many workers: one per core, at least 1, at most 16. */
export function poolSize(asked?: number): number {
  return Math.max(1, Math.min(asked ?? navigator.hardwareConcurrency ?? 2, 16));
}

/**
 * Runs `n` workers from `spawn`, each given `job(part)`. Resolves with what
 * was found, also after `signal` aborts (then `complete` is false); rejects
 * with {@link ObservationError} when a worker's model refuses its input.
 */
export function searchPool<F>(
  n: number,
  spawn: () => Worker,
  job: (part: PartJob) => object,
  opts: { onProgress?: (p: PoolProgress<F>) => void; signal?: AbortSignal } = {},
): Promise<PoolResult<F>> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const workers: Worker[] = [];
    const searched = new Array<number>(n).fill(0);
    const parts: ({ count: number; values: number[] } | undefined)[] = new Array(n).fill(undefined);
    let plan: F | undefined;
    let settled = false;
    let finished = 0;
    const total = () => searched.reduce((a, b) => a + b, 0);
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      for (const x of workers) x.terminate();
      opts.signal?.removeEventListener('abort', onAbort);
      reject(err);
    };
    const finish = (complete: boolean) => {
      if (settled) return;
      settled = true;
      for (const w of workers) w.terminate();
      opts.signal?.removeEventListener('abort', onAbort);
      const seconds = (performance.now() - t0) / 1000;
      const values: number[] = [];
      let candidates = 0;
      for (const p of parts) {
        if (!p) continue;
        candidates += p.count;
        for (const v of p.values) if (values.length < KEPT) values.push(v);
      }
      resolve({
        plan,
        candidates,
        values,
        complete,
        seconds,
        keysPerSecond: total() / Math.max(seconds, 1e-9),
        workers: n,
        parts: parts.map((p, i) => ({ count: p?.count ?? 0, values: p?.values ?? [], searched: searched[i]! })),
      });
    };
    const onAbort = () => finish(false);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    for (let i = 0; i < n; i++) {
      const start = Math.floor((SPACE / n) * i);
      const end = i + 1 === n ? SPACE : Math.floor((SPACE / n) * (i + 1));
      const w = spawn();
      workers.push(w);
      w.onmessage = (e: MessageEvent<PartReply<F>>) => {
        const m = e.data;
        if (m.error) return fail(new ObservationError(m.error.observation, m.error.message));
        if (m.plan) plan = m.plan;
        if (m.progress !== undefined) {
          searched[i] = m.progress;
          if (m.count) parts[i] = { count: m.count, values: m.values ?? parts[i]?.values ?? [] };
          const done = total();
          const elapsed = (performance.now() - t0) / 1000;
          opts.onProgress?.({ searched: done, total: SPACE, eta: done > 0 && elapsed > 0.2 ? ((SPACE - done) * elapsed) / done : undefined, plan });
        }
        if (m.done) {
          if (m.done.unverified)
            return fail(
              new Error(`candidate ${m.done.unverified.candidate} did not reproduce every observation through the model's selection; please report this`),
            );
          parts[i] = m.done;
          searched[i] = end - start;
          finished++;
          if (finished === n) finish(true);
        }
      };
      w.onerror = (ev) => fail(new Error(ev.message || 'a search worker failed'));
      w.postMessage(job({ start, end, report: i === 0 }));
    }
  });
}

/**
 * The worker side: searches `start..end` in chunks with `search` (the
 * model's), replying progress after each chunk so that the page sees it and
 * `terminate()` stops within one chunk; returns what was found.
 */
export function searchChunks<F>(
  part: PartJob,
  search: (start: number, end: number) => { count: number; values: number[] },
  reply: (m: PartReply<F>) => void,
): { count: number; values: number[] } {
  let count = 0;
  const values: number[] = [];
  for (let s = part.start; s < part.end; s += CHUNK) {
    const end = Math.min(part.end, s + CHUNK);
    const found = search(s, end);
    count += found.count;
    for (const v of found.values) if (values.length < KEPT) values.push(v);
    // What was found so far travels with the progress, so a cancelled search keeps it.
    reply({ progress: end - part.start, count, values: found.values.length ? values : undefined });
  }
  return { count, values };
}
