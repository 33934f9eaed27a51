/**
 * The in-browser key search: the model's `Recovery` in one Web Worker per
 * core, each over its own part of the 2^32 keys (src/model/recover-worker.ts),
 * merged in key order as `reuseport-agent recover` merges its threads.
 */
import type { GroupSpec } from './generated/GroupSpec';
import type { Tuple } from './generated/Tuple';
import { ObservationError, poolSize, searchPool, SPACE, type PartJob, type PoolProgress, type PoolResult } from './search-pool';

/** Observations the search takes at most: far more than any key needs, and a bound on the plan's work. */
export const MAX_OBSERVATIONS = 2000;

/** What a search worker (src/model/recover-worker.ts) is given. */
export interface RecoverJob extends PartJob {
  kernel: string;
  group: GroupSpec;
  observations: { tuple: Tuple; listener: number }[];
}

/** What the observations say before the search (from the model's plan). */
export interface PlanFigures {
  constraints: number;
  duplicates: number;
  uninformative: number;
  expectedFalseMatches: number;
  moreNeeded: number | null;
  isa: string;
}

/** The answer: every key that reproduces every observation (the first 1000 of them, increasing), and whether the whole space was searched. */
export interface Recovered extends Omit<PoolResult<PlanFigures>, 'plan' | 'parts'> {
  plan: PlanFigures;
  /** Observations given beyond {@link MAX_OBSERVATIONS}, not used. */
  leftOut: number;
}

/** Progress of a running search. */
export type RecoverProgress = PoolProgress<PlanFigures>;

export { ObservationError };

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
  const used = observations.slice(0, MAX_OBSERVATIONS);
  const spawn = () => new Worker(new URL('./recover-worker.ts', import.meta.url), { type: 'module' });
  const job = (part: PartJob): RecoverJob => ({ kernel, group, observations: used, ...part });
  return searchPool<PlanFigures>(poolSize(opts.workers), spawn, job, opts).then((r) => ({
    plan: r.plan ?? { constraints: 0, duplicates: 0, uninformative: 0, expectedFalseMatches: SPACE, moreNeeded: null, isa: '' },
    candidates: r.candidates,
    values: r.values,
    complete: r.complete,
    seconds: r.seconds,
    keysPerSecond: r.keysPerSecond,
    workers: r.workers,
    leftOut: observations.length - used.length,
  }));
}
