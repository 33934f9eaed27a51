/**
 * The server diagnosis from the page: pasted `ss` output, an `observe`
 * report or per-worker counts, read and judged by the model
 * (`reuseport_model::diagnose`). A session worker (src/model/diagnose-worker.ts)
 * reads the text and holds the model's `Diagnose` handle; the labelled key
 * search runs on the shared search pool (src/model/search-pool.ts), one
 * worker per core, with progress and Stop, and the session finishes the
 * diagnosis with what the parts found.
 */
import { Rpc, type Exchange } from './rpc';
import type { CountsDiagnosis } from './generated/CountsDiagnosis';
import type { Diagnosis } from './generated/Diagnosis';
import type { Reason } from './generated/Reason';
import type { ServerInput } from './generated/ServerInput';
import type { Snapshot } from './generated/Snapshot';
import type { DiagnoseJob } from './diagnose-search-worker';
import type { DiagnosePlan } from './pkg-lookup/reuseport.js';
import { poolSize, searchPool, SPACE, type PartJob, type PoolProgress, type PoolResult } from './search-pool';

export type { CountsDiagnosis, DiagnosePlan, Diagnosis, Reason, ServerInput, Snapshot };
export type { SsRead } from './generated/SsRead';
export type { VerdictKind } from './generated/VerdictKind';

/** A snapshot grouped: whether a key can be searched (else why not), and the diagnosis without one. */
export interface PreparedView {
  searchable: boolean;
  noSearch: Reason | null;
  plan: DiagnosePlan | null;
  diagnosis: Diagnosis;
}

/** Every request of the page to the session worker (src/model/diagnose-worker.ts): its arguments and its answer. */
export type DiagnoseProtocol = {
  read: Exchange<{ text: string; port?: number; proto?: string }, ServerInput>;
  prepare: Exchange<{ kernel: string; snapshot: Snapshot }, PreparedView>;
  finish: Exchange<{ parts: { count: number; values: number[]; searched: number }[] }, Diagnosis>;
  counts: Exchange<{ counts: number[]; workers?: number }, CountsDiagnosis>;
};

/** An `observe` report (`reuseport-observe-v1`): its snapshot, the kernel it ran on, and the key it found. */
export interface ObserveReport {
  snapshot: Snapshot;
  kernelRelease: string;
  /** The initval the agent's search pinned, if it did. */
  key: number | null;
}

/** Reads an `observe` JSON report, or returns null when `text` is not one (then it is pasted text). */
export function readObserveReport(text: string): ObserveReport | null {
  const t = text.trimStart();
  if (!t.startsWith('{')) return null;
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || (v as { format?: unknown }).format !== 'reuseport-observe-v1') return null;
  const r = v as { snapshot: Snapshot; kernelRelease?: string; key?: { initval?: string } | null };
  const iv = r.key?.initval ? Number.parseInt(r.key.initval, 16) : Number.NaN;
  return { snapshot: r.snapshot, kernelRelease: r.kernelRelease ?? '', key: Number.isSafeInteger(iv) ? iv : null };
}

/** One session worker; each snapshot prepared replaces the one before. */
export class ServerSession {
  #rpc?: Rpc<DiagnoseProtocol>;

  #worker(): Rpc<DiagnoseProtocol> {
    this.#rpc ??= new Rpc(new Worker(new URL('./diagnose-worker.ts', import.meta.url), { type: 'module' }));
    return this.#rpc;
  }

  #call<K extends keyof DiagnoseProtocol & string>(type: K, args: DiagnoseProtocol[K]['args']): Promise<DiagnoseProtocol[K]['result']> {
    return this.#worker().call(type, args);
  }

  /** Reads pasted text: socket tables or counts (throws the model's sentence when it is neither). */
  read(text: string, port?: number, proto?: string): Promise<ServerInput> {
    return this.#call('read', { text, port, proto });
  }

  /** Groups a snapshot under `kernel`'s rules. */
  prepare(kernel: string, snapshot: Snapshot): Promise<PreparedView> {
    return this.#call('prepare', { kernel, snapshot });
  }

  /** Finishes the prepared snapshot with a key already known (an `observe` report's), checked by the model against every connection. */
  finishWithKey(key: number): Promise<Diagnosis> {
    return this.#call('finish', { parts: [{ count: 1, values: [key], searched: SPACE }] });
  }

  /**
   * Searches every key for the prepared snapshot (the same `kernel` and
   * `snapshot`) and finishes it with what was found: a stopped search
   * finishes as not searched.
   */
  async search(
    kernel: string,
    snapshot: Snapshot,
    opts: { onProgress?: (p: PoolProgress<DiagnosePlan>) => void; signal?: AbortSignal; workers?: number } = {},
  ): Promise<{ diagnosis: Diagnosis; search: PoolResult<DiagnosePlan> }> {
    const spawn = () => new Worker(new URL('./diagnose-search-worker.ts', import.meta.url), { type: 'module' });
    const job = (part: PartJob): DiagnoseJob => ({ kernel, snapshot, ...part });
    const search = await searchPool<DiagnosePlan>(poolSize(opts.workers), spawn, job, opts);
    const diagnosis = await this.#call('finish', { parts: search.parts });
    return { diagnosis, search };
  }

  /** Per-worker counts judged by their total; `workers` when some got none and are not listed. */
  counts(counts: number[], workers?: number): Promise<CountsDiagnosis> {
    return this.#call('counts', { counts, workers });
  }

  dispose(): void {
    this.#rpc?.dispose();
    this.#rpc = undefined;
  }
}
