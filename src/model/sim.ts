/**
 * The page's handle on the simulation worker (src/model/sim-worker.ts): the
 * curated scenarios, and runs of several variants with progress and Stop.
 * Every figure is the model's; this file only carries requests and answers.
 */
import { Rpc, type Exchange } from './rpc';
import type { Scenario } from './generated/Scenario';
import type { SimReport } from './generated/SimReport';
import type { CuratedView } from './generated/CuratedView';
import type { Variant } from './generated/Variant';
import type { AcceptModel } from './generated/AcceptModel';
import type { Latency } from './generated/Latency';
import type { WorkerReport } from './generated/WorkerReport';
import type { Observed } from './generated/Observed';
import type { Shape } from './generated/Shape';

export type { Scenario, SimReport, CuratedView, Variant, AcceptModel, Latency, WorkerReport, Observed, Shape };

/** The simulator's accept models, in the order the pages list them. */
export const ACCEPT_MODELS: readonly AcceptModel[] = [
  'blocking',
  'epoll',
  'epoll-exclusive',
  'accept-mutex',
  'reuseport',
  'reuseport-incoming-cpu',
  'reuseport-bpf-cpu',
  'reuseport-least-loaded',
];

/** The curated variants ranked against an observation (closest first). */
export interface MatchAnswer {
  /** The observation's shape. */
  observed: Shape;
  /** Stopped before every variant ran: only those that ran are ranked. */
  partial: boolean;
  ranked: { name: string; variant: Variant; distance: number; shape: Shape; accepts: number[] }[];
}

/** Progress of a run of several scenarios. */
export interface SimProgress {
  /** Which scenario (from 0) is running. */
  run: number;
  runs: number;
  /** Its connections arrived so far, and in all. */
  arrived: number;
  total: number;
}

/** Every request of the page to the simulation worker (src/model/sim-worker.ts): its arguments, its answer, its progress. */
export type SimProtocol = {
  curated: Exchange<Record<string, never>, CuratedView[]>;
  run: Exchange<{ scenarios: Scenario[] }, SimReport[], SimProgress>;
  match: Exchange<{ observed: Observed }, MatchAnswer, SimProgress>;
};

/** One simulation worker. */
export class SimSession {
  #rpc?: Rpc<SimProtocol>;

  #worker(): Rpc<SimProtocol> {
    this.#rpc ??= new Rpc(new Worker(new URL('./sim-worker.ts', import.meta.url), { type: 'module' }));
    return this.#rpc;
  }

  /** The gallery's scenarios, each with its variants. */
  curated(): Promise<CuratedView[]> {
    return this.#worker().call('curated', {});
  }

  /** Runs each scenario in turn; after {@link stop}, the last report is partial and the rest are missing. */
  run(scenarios: Scenario[], progress?: (p: SimProgress) => void): Promise<SimReport[]> {
    return this.#worker().call('run', { scenarios }, progress);
  }

  /** Runs every curated variant and ranks them against `observed` (the model's matcher). */
  match(observed: Observed, progress?: (p: SimProgress) => void): Promise<MatchAnswer> {
    return this.#worker().call('match', { observed }, progress);
  }

  /** Ends the current run early with what it has. */
  stop(): void {
    this.#rpc?.stop();
  }

  dispose(): void {
    this.#rpc?.dispose();
    this.#rpc = undefined;
  }
}
