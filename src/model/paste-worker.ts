/**
 * The paste worker: holds the model's paste session (wasm `Paste`) and
 * answers the page's requests (src/model/paste.ts). Long calls work in
 * chunks, report progress, and stop early when asked, answering with what
 * they have. Files are read as a stream, so a large file is never held
 * twice as text.
 */
import { Paste } from './pkg-lookup/reuseport.js';
import { loadLookup as ready } from './lookup';
import { breathe, serve } from './rpc';
import { checkTrace } from './trace-check';
import type { PasteProtocol, Progress, ReadOptions, ReadSummary } from './paste-protocol';

/** The paste session, from the larger package (with the full lookup), which only this worker and the key search load. */
let session: Paste | undefined;

/** Text handed to the model per call (about 20 ms of parsing). */
const CHUNK_CHARS = 1 << 20;
/** Boots per simulation step. */
const BOOT_STEP = 64;

function fresh(options: ReadOptions): Paste {
  session?.free();
  session = new Paste({ format: options.format, columns: options.columns, bind: options.bind, flip: options.flip });
  return session;
}

function need(): Paste {
  if (!session) throw new Error('nothing has been read yet');
  return session;
}

/** A trace file: its events become observed lines, and its group is returned for the form. */
async function readTrace(text: string, options: ReadOptions, progress: (p: Progress) => void): Promise<ReadSummary> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`the file is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  const checked = checkTrace(value);
  if (checked.errors) throw new Error(checked.errors.slice(0, 5).join('; '));
  const tr = checked.trace;
  const g = tr.group;
  const bind = options.bind ?? `${g.bind.includes(':') ? `[${g.bind}]` : g.bind}:${g.port}`;
  const s = fresh({ ...options, format: 'observed', bind });
  const lines: string[] = [];
  for (let i = 0; i < tr.events.length; i++) {
    const e = tr.events[i]!;
    const a = (x: string, p: number) => (x.includes(':') ? `[${x}]:${p}` : `${x}:${p}`);
    lines.push(`${a(e.saddr, e.sport)} ${a(e.daddr, e.dport)} ${e.listener}`);
    if (lines.length === 50_000 || i + 1 === tr.events.length) {
      s.feed(lines.join('\n') + '\n');
      lines.length = 0;
      progress({ phase: 'read', done: i + 1, total: tr.events.length });
      await breathe();
    }
  }
  const summary = s.finish(false);
  return { ...summary, trace: { kernel: tr.kernel.profile, proto: g.proto, listeners: g.listeners, closed: g.closed ?? [], bind: g.bind, port: g.port } };
}

serve<PasteProtocol>({
  async read(args, ctx) {
    await ready();
    const { source, options } = args;
    const isJson = (head: string) => options.format === 'trace' || (options.format === null && /^\s*\{/.test(head) && head.includes('reuseport-lab-trace'));
    if ('text' in source) {
      if (isJson(source.text.slice(0, 4096))) return readTrace(source.text, options, ctx.progress);
      const s = fresh(options);
      let partial = false;
      for (let i = 0; i < source.text.length; i += CHUNK_CHARS) {
        s.feed(source.text.slice(i, i + CHUNK_CHARS));
        ctx.progress({ phase: 'read', done: Math.min(source.text.length, i + CHUNK_CHARS), total: source.text.length });
        await breathe();
        if (ctx.stopped()) {
          partial = true;
          break;
        }
      }
      return s.finish(partial);
    }
    const file = source.file;
    const head = await file.slice(0, 4096).text();
    if (isJson(head)) return readTrace(await file.text(), options, ctx.progress);
    const s = fresh(options);
    const reader = file.stream().pipeThrough(new TextDecoderStream()).getReader();
    let done = 0;
    let partial = false;
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      // The model takes the decoder's chunks (up to a few MB) as they come.
      s.feed(value);
      done += value.length;
      ctx.progress({ phase: 'read', done: Math.min(done, file.size), total: file.size });
      // A file's chunks arrive without a pause: let a Stop in between them.
      await breathe();
      if (ctx.stopped()) {
        partial = true;
        await reader.cancel();
        break;
      }
    }
    return s.finish(partial);
  },

  async answer(req) {
    await ready();
    return need().answer(req);
  },

  async answerLayout(req) {
    await ready();
    return need().answerLayout(req);
  },

  explainLayout(a) {
    return need().explainLayout(a.index, a.cpu);
  },

  async spread(args, ctx) {
    await ready();
    const s = need();
    s.spreadStart(args.req, 0x5eed);
    const rows = Math.max(1, s.rowCount());
    // Boots × connections within a budget: the vectorised path does ~20× more per second.
    const budget = s.spreadVectorised() ? 1e8 : 5e6;
    const boots = Math.max(1, Math.min(100_000, Math.floor(args.boots ?? Math.max(100, Math.min(10_000, budget / rows)))));
    let done = 0;
    while (done < boots && !ctx.stopped()) {
      done = s.spreadStep(Math.min(BOOT_STEP, boots - done));
      ctx.progress({ phase: 'spread', done, total: boots });
      await breathe();
    }
    // The simulation counts listening members only: closed ones drop out of the observed counts too.
    const closed = new Set([...args.req.group.closed, ...args.req.group.shutdown]);
    const observed = args.observed?.filter((_, i) => !closed.has(i));
    let comparison = null;
    let compareError: string | null = null;
    if (observed?.length) {
      try {
        comparison = s.spreadCompare(Uint32Array.from(observed));
      } catch (err) {
        compareError = err instanceof Error ? err.message : String(err);
      }
    }
    const byListeners = s.byListeners(args.req, Math.max(20, Math.min(1000, Math.floor(budget / 5 / rows))));
    return { spread: s.spreadSummary(), comparison, compareError, byListeners };
  },

  filter(f) {
    return need().filter(f.listener ?? -1, f.query);
  },

  rows(a) {
    return need().rows(a.start, Math.min(a.count, 500));
  },

  bad(a) {
    return need().bad(a.start, Math.min(a.count, 500));
  },

  notes(a) {
    return need().notes(a.start, Math.min(a.count, 500));
  },

  explain(a) {
    return need().explain(a.index, a.req);
  },

  observations() {
    return need().observations(2000);
  },

  async export(a) {
    const s = need();
    const n = s.rowCount();
    const parts: string[] = [];
    if (a.kind === 'json') parts.push(`{"meta":${JSON.stringify(a.meta)},"rows":[`);
    for (let i = 0; i < n; i += 50_000) {
      parts.push(a.kind === 'csv' ? s.exportCsv(i, 50_000, i === 0) : (i ? ',' : '') + s.exportJson(i, 50_000));
      await breathe();
    }
    if (a.kind === 'json') parts.push(']}');
    return new Blob(parts, { type: a.kind === 'csv' ? 'text/csv' : 'application/json' });
  },
});
