/**
 * The in-browser key search: the model's `Recovery` in one Web Worker per
 * core, each over its own part of the 2^32 keys (src/model/recover-worker.ts),
 * merged in key order as `reuseport-agent recover` merges its threads.
 */
import type { GroupSpec } from './generated/GroupSpec';
import type { Tuple } from './generated/Tuple';
import type { RecoverJob, RecoverReply } from './recover-worker';

/** Observations the search takes at most: far more than any key needs, and a bound on the plan's work. */
export const MAX_OBSERVATIONS = 2000;
const SPACE = 2 ** 32;

/** What the observations say before the search (from the model's plan). */
export interface PlanFigures {
  constraints: number;
  duplicates: number;
  uninformative: number;
  expectedFalseMatches: number;
  moreNeeded: number | null;
  isa: string;
}

/** The answer: every key that reproduces every observation. */
export interface Recovered {
  plan: PlanFigures;
  /** Keys that satisfy every observation. */
  candidates: number;
  /** The first 1000 of them, increasing. */
  values: number[];
  /** Whether the whole key space was searched. */
  complete: boolean;
  seconds: number;
  keysPerSecond: number;
  workers: number;
  /** Observations given beyond {@link MAX_OBSERVATIONS}, not used. */
  leftOut: number;
}

/** Progress of a running search. */
export interface RecoverProgress {
  searched: number;
  total: number;
  /** Seconds left at the rate so far (undefined until measurable). */
  eta?: number;
  plan?: PlanFigures;
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

/**
 * Searches every key for the one that sends each observed tuple to its
 * listener. Resolves with what was found, also after `signal` aborts (then
 * `complete` is false); rejects with {@link ObservationError} when the model
 * refuses an observation.
 */
export function recoverKey(
  kernel: string,
  group: GroupSpec,
  observations: { tuple: Tuple; listener: number }[],
  opts: { workers?: number; onProgress?: (p: RecoverProgress) => void; signal?: AbortSignal } = {},
): Promise<Recovered> {
  const n = Math.max(1, Math.min(opts.workers ?? navigator.hardwareConcurrency ?? 2, 16));
  const used = observations.slice(0, MAX_OBSERVATIONS);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const workers: Worker[] = [];
    const searched = new Array<number>(n).fill(0);
    const parts: ({ count: number; values: number[] } | undefined)[] = new Array(n).fill(undefined);
    let plan: PlanFigures | undefined;
    let settled = false;
    let finished = 0;
    const total = () => searched.reduce((a, b) => a + b, 0);
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
        for (const v of p.values) if (values.length < 1000) values.push(v);
      }
      resolve({
        plan: plan ?? { constraints: 0, duplicates: 0, uninformative: 0, expectedFalseMatches: SPACE, moreNeeded: null, isa: '' },
        candidates,
        values,
        complete,
        seconds,
        keysPerSecond: total() / Math.max(seconds, 1e-9),
        workers: n,
        leftOut: observations.length - used.length,
      });
    };
    const onAbort = () => finish(false);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    for (let i = 0; i < n; i++) {
      const start = Math.floor((SPACE / n) * i);
      const end = i + 1 === n ? SPACE : Math.floor((SPACE / n) * (i + 1));
      const w = new Worker(new URL('./recover-worker.ts', import.meta.url), { type: 'module' });
      workers.push(w);
      w.onmessage = (e: MessageEvent<RecoverReply>) => {
        const m = e.data;
        if (m.error) {
          settled = true;
          for (const x of workers) x.terminate();
          reject(new ObservationError(m.error.observation, m.error.message));
          return;
        }
        if (m.plan) plan = m.plan;
        if (m.progress !== undefined) {
          searched[i] = m.progress;
          if (m.count) parts[i] = { count: m.count, values: m.values ?? parts[i]?.values ?? [] };
          const done = total();
          const elapsed = (performance.now() - t0) / 1000;
          opts.onProgress?.({ searched: done, total: SPACE, eta: done > 0 && elapsed > 0.2 ? ((SPACE - done) * elapsed) / done : undefined, plan });
        }
        if (m.done) {
          if (m.done.unverified) {
            settled = true;
            for (const x of workers) x.terminate();
            reject(
              new Error(`candidate ${m.done.unverified.candidate} did not reproduce every observation through the model's ` + `selection; please report this`),
            );
            return;
          }
          parts[i] = m.done;
          searched[i] = end - start;
          finished++;
          if (finished === n) finish(true);
        }
      };
      w.onerror = (ev) => {
        if (settled) return;
        settled = true;
        for (const x of workers) x.terminate();
        reject(new Error(ev.message || 'a search worker failed'));
      };
      const job: RecoverJob = { kernel, group, observations: used, start, end, report: i === 0 };
      w.postMessage(job);
    }
  });
}
