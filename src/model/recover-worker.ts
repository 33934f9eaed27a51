/**
 * One part of an in-browser key search: the page starts one of these per
 * core, each with the same observations and its own part of 0..2^32, as
 * `reuseport-agent recover` does with threads. The search is the model's
 * (`Recovery.search`, the SIMD128 copy of the loop); this file only slices
 * it into chunks so that progress can be reported and `terminate()` stops
 * it within one chunk.
 *
 * In: {@link RecoverJob}. Out: `{ plan }` once (worker 0 only), `{ progress }`
 * after every chunk, then `{ done }` with the candidates (each checked
 * through the model's own selection), or `{ error }`.
 */
import init, { Recovery } from './pkg-lookup/reuseport.js';
import type { GroupSpec } from './generated/GroupSpec';
import type { Tuple } from './generated/Tuple';
import type { PlanFigures } from './recover';

/** What a search worker is given. */
export interface RecoverJob {
  kernel: string;
  group: GroupSpec;
  observations: { tuple: Tuple; listener: number }[];
  start: number;
  end: number;
  /** Report the plan's figures (one worker does). */
  report: boolean;
}

/** What a search worker says: its plan's figures, progress, the end, or why it stopped (one message may carry several). */
export interface RecoverReply {
  plan?: PlanFigures;
  progress?: number;
  count?: number;
  values?: number[];
  done?: { count: number; values: number[]; unverified: { candidate: number; observation: number } | null };
  error?: { observation?: number; message: string };
}

/** Keys per chunk: about 10 ms at 0.4 G keys/s. */
const CHUNK = 2 ** 22;

/** Posts one message to the page, of the shape the page reads. */
const reply = (m: RecoverReply) => postMessage(m);

self.onmessage = async (e: MessageEvent<RecoverJob>) => {
  const job = e.data;
  try {
    await init();
    const r = new Recovery({ kernel: job.kernel, group: job.group });
    const added = { new: 0, duplicate: 0, uninformative: 0 };
    for (const [i, o] of job.observations.entries()) {
      try {
        added[r.add(o.tuple, o.listener)]++;
      } catch (err) {
        reply({ error: { observation: i, message: err instanceof Error ? err.message : String(err) } });
        return;
      }
    }
    if (job.report)
      reply({
        plan: {
          constraints: r.constraints(),
          duplicates: r.duplicates(),
          uninformative: added.uninformative,
          expectedFalseMatches: r.expectedFalseMatches(),
          moreNeeded: r.moreNeeded() ?? null,
          isa: r.isa(),
        },
      });
    let count = 0;
    const values: number[] = [];
    for (let s = job.start; s < job.end; s += CHUNK) {
      const end = Math.min(job.end, s + CHUNK);
      const part = r.search(s, end);
      count += part.count;
      for (const v of part.values) if (values.length < 1000) values.push(v);
      // What was found so far travels with the progress, so a cancelled search keeps it.
      reply({ progress: end - job.start, count, values: part.values.length ? values : undefined });
    }
    const bad = r.verify(Uint32Array.from(values));
    const unverified = values.findIndex((_, i) => bad[i] !== -1);
    reply({ done: { count, values, unverified: unverified < 0 ? null : { candidate: values[unverified]!, observation: bad[unverified]! } } });
    r.free();
  } catch (err) {
    reply({ error: { message: err instanceof Error ? err.message : String(err) } });
  }
};
