/**
 * The server diagnosis's session worker: reads pasted text with the
 * model's reader, holds the model's `Diagnose` handle for the snapshot, and
 * finishes it with what the search workers found (the spread among
 * simulated boots runs here, off the page's thread). Requests come from
 * src/model/diagnose.ts over src/model/rpc.ts.
 */
import { Diagnose, diagnoseCounts, readServer } from './pkg-lookup/reuseport.js';
import { loadLookup as ready } from './lookup';
import { serve } from './rpc';
import type { DiagnoseProtocol } from './diagnose';

let held: Diagnose | undefined;

serve<DiagnoseProtocol>({
  async read({ text, port, proto }) {
    await ready();
    return readServer(text, port ?? 0, proto ?? '');
  },
  async prepare({ kernel, snapshot }) {
    await ready();
    held?.free();
    held = new Diagnose(kernel, snapshot);
    return { searchable: held.searchable(), noSearch: held.noSearch(), plan: held.plan(), diagnosis: held.finish() };
  },
  async finish({ parts }) {
    if (!held) throw new Error('nothing has been prepared yet');
    for (const p of parts) held.merge(p.count, Uint32Array.from(p.values), p.searched);
    return held.finish();
  },
  async counts({ counts, workers }) {
    await ready();
    return diagnoseCounts(Float64Array.from(counts), workers);
  },
});
