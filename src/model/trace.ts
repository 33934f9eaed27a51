/**
 * Measured traces (format v1, written by `reuseport-agent record`): asking the
 * model what it predicts for every recorded event (checking a file is in
 * trace-check.ts). No kernel rule is here: the trace's group
 * becomes a model group description field for field, and every prediction is
 * the model's `explain`.
 */
import { Group, NO_LISTENER, V4Batch, ipv4ToNumber, type Explain, type GroupInput, type Tuple } from './index';
import type { Trace, TraceEvent } from './trace-check';

export { MAX_TRACE_BYTES, MAX_TRACE_EVENTS, checkTrace, type Trace, type TraceEvent } from './trace-check';

/** The model's description of the trace's group with the IPv4 key `key`. */
export function traceGroup(trace: Trace, key: number): GroupInput {
  const g = trace.group;
  const bpf = g.bpf ?? null;
  const program =
    bpf?.kind === 'cpu' ? { kind: 'cpu' as const } : bpf?.kind === 'payload-mod' && bpf.modulus ? { kind: 'payload_mod' as const, modulus: bpf.modulus } : null;
  return {
    proto: g.proto,
    listeners: g.listeners,
    bind: g.bind,
    port: g.port,
    v6only: g.v6only ?? false,
    closed: g.closed ?? [],
    incomingCpu: g.incomingCpu ?? [],
    tcpMigrateReq: g.tcpMigrateReq ?? false,
    program,
    keys: { v4: key >>> 0, v6Outer: 0, v6Inner: 0 },
  };
}

/** What the model says for one event. */
export enum Predicted {
  /** The group returned no socket. */
  None = -1,
  /** The answer depends on the per-boot key, which is not known. */
  NeedsKey = -2,
}

/** Options of {@link predictTrace}. */
export interface PredictOptions {
  /** The recovered IPv4 key; without it only the events whose answer does not depend on the key are predicted. */
  key?: number;
  /** Called between chunks with the events done so far. */
  onProgress?: (done: number, total: number) => void;
  /** Stops the work between chunks (the promise rejects with an AbortError). */
  signal?: AbortSignal;
  /** Events per chunk between yields to the page (explain path). @default 500 */
  chunk?: number;
  /** Use the batch API where it applies (IPv4, key known, selection by hash alone). @default true */
  batch?: boolean;
}

function tupleOf(e: TraceEvent): Tuple {
  return { saddr: e.saddr, sport: e.sport, daddr: e.daddr, dport: e.dport };
}

/** The model's whole record for event `index` of `trace` in `group` (its CPU, and its number as the payload under a payload program). */
export function explainEvent(group: Group, trace: Trace, index: number): Explain {
  const e = trace.events[index]!;
  const payload = trace.group.bpf?.kind === 'payload-mod' ? (e.seq ?? index) >>> 0 : null;
  return group.explain(tupleOf(e), e.cpu ?? 0, payload);
}

const tick = () => new Promise<void>((r) => setTimeout(r, 0));

/**
 * The model's listener for every event (listen-order number, or a
 * {@link Predicted} value), computed in chunks so the page stays responsive.
 * Without a key, an event is predicted only when the model's record says a
 * program chose the socket without falling back to the hash.
 */
export async function predictTrace(trace: Trace, opts: PredictOptions = {}): Promise<Int32Array> {
  const n = trace.events.length;
  const out = new Int32Array(n);
  const chunk = opts.chunk ?? 500;
  const known = opts.key !== undefined;
  const a = new Group(trace.kernel.release, traceGroup(trace, opts.key ?? 0));
  // With the key, an IPv4 group that selects by hash alone goes through the batch API
  // (the model's vectorised path, equal to explain's answer by the model's own tests).
  const g = trace.group;
  if ((opts.batch ?? true) && known && !g.bind.includes(':') && !g.bpf && !g.incomingCpu?.length) {
    try {
      await predictBatch(a, trace, out, opts);
    } finally {
      a.dispose();
    }
    return out;
  }
  try {
    for (let i = 0; i < n; i += chunk) {
      if (opts.signal?.aborted) throw new DOMException('The prediction was cancelled.', 'AbortError');
      const end = Math.min(n, i + chunk);
      for (let j = i; j < end; j++) {
        const x = explainEvent(a, trace, j);
        const keyFree = x.pick.kind === 'program' && x.pick.then === null;
        out[j] = known || keyFree ? (x.listener ?? Predicted.None) : Predicted.NeedsKey;
      }
      opts.onProgress?.(end, n);
      if (end < n) await tick();
    }
  } finally {
    a.dispose();
  }
  return out;
}

/** Batch size of {@link predictBatch}. */
const BATCH = 16384;

async function predictBatch(group: Group, trace: Trace, out: Int32Array, opts: PredictOptions): Promise<void> {
  const n = trace.events.length;
  const batch = new V4Batch(Math.min(BATCH, Math.max(1, n)));
  try {
    for (let i = 0; i < n; i += BATCH) {
      if (opts.signal?.aborted) throw new DOMException('The prediction was cancelled.', 'AbortError');
      const end = Math.min(n, i + BATCH);
      let v = batch.views();
      for (let j = i; j < end; j++) {
        const e = trace.events[j]!;
        const sa = ipv4ToNumber(e.saddr);
        const da = ipv4ToNumber(e.daddr);
        if (sa === undefined || da === undefined)
          throw new Error(`/events/${j}/${sa === undefined ? 'saddr' : 'daddr'}: not an IPv4 address, in an IPv4 group`);
        v.saddr[j - i] = sa;
        v.sport[j - i] = e.sport;
        v.daddr[j - i] = da;
        v.dport[j - i] = e.dport;
      }
      group.selectBatchV4(batch, end - i, 0);
      v = batch.views(); // wasm memory may have grown
      for (let j = i; j < end; j++) {
        const l = v.out[j - i]!;
        out[j] = l === NO_LISTENER ? Predicted.None : l;
      }
      opts.onProgress?.(end, n);
      if (end < n) await tick();
    }
  } finally {
    batch.dispose();
  }
}
