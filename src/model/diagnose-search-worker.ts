/**
 * One part of the server diagnosis's labelled key search: the page starts
 * one of these per core (src/model/search-pool.ts), each holding the
 * model's `Diagnose` handle over the same snapshot and searching its own
 * part of 0..2^32. The search is the model's; this file slices it into
 * chunks for progress and Stop.
 *
 * In: {@link DiagnoseJob}. Out: `PartReply<DiagnosePlan>`.
 */
import init, { Diagnose, type DiagnosePlan } from './pkg-lookup/reuseport.js';
import type { Snapshot } from './generated/Snapshot';
import { searchChunks, type PartJob, type PartReply } from './search-pool';

/** What a search worker is given. */
export interface DiagnoseJob extends PartJob {
  kernel: string;
  snapshot: Snapshot;
}

const reply = (m: PartReply<DiagnosePlan>) => postMessage(m);

self.onmessage = async (e: MessageEvent<DiagnoseJob>) => {
  const job = e.data;
  try {
    await init();
    const d = new Diagnose(job.kernel, job.snapshot);
    const plan = d.plan();
    if (job.report && plan) reply({ plan });
    const { count, values } = searchChunks(job, (s, end) => d.search(s, end), reply);
    // The page's session checks every candidate through the model's selection when it finishes.
    reply({ done: { count, values, unverified: null } });
    d.free();
  } catch (err) {
    reply({ error: { message: err instanceof Error ? err.message : String(err) } });
  }
};
