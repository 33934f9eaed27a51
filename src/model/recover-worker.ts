/**
 * One part of an in-browser key search: the page starts one of these per
 * core, each with the same observations and its own part of 0..2^32, as
 * `reuseport-agent recover` does with threads. The search is the model's
 * (`Recovery.search`, the SIMD128 copy of the loop); this file only slices
 * it into chunks so that progress can be reported and `terminate()` stops
 * it within one chunk.
 *
 * In: {@link RecoverJob} (src/model/recover.ts). Out: {@link PartReply} (src/model/search-pool.ts):
 * `{ plan }` once (worker 0 only), `{ progress }` after every chunk, then
 * `{ done }` with the candidates (each checked through the model's own
 * selection), or `{ error }`.
 */
import init, { Recovery } from './pkg-lookup/reuseport.js';
import type { PlanFigures, RecoverJob } from './recover';
import { searchChunks, type PartReply } from './search-pool';

/** Posts one message to the page, of the shape the page reads. */
const reply = (m: PartReply<PlanFigures>) => postMessage(m);

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
    const { count, values } = searchChunks(job, (s, end) => r.search(s, end), reply);
    const bad = r.verify(Uint32Array.from(values));
    const unverified = values.findIndex((_, i) => bad[i] !== -1);
    reply({ done: { count, values, unverified: unverified < 0 ? null : { candidate: values[unverified]!, observation: bad[unverified]! } } });
    r.free();
  } catch (err) {
    reply({ error: { message: err instanceof Error ? err.message : String(err) } });
  }
};
