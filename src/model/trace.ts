/**
 * Measured traces (format v1, written by `reuseport-agent record`): checking a
 * file against the checked-in JSON Schema, and asking the model what it
 * predicts for every recorded event. No kernel rule is here: the trace's group
 * becomes a model group description field for field, and every prediction is
 * the model's `explain`.
 */
import Ajv2020 from 'ajv/dist/2020';
import schema from '../../public/traces/schema/trace-v1.schema.json';
import { Group, type GroupInput, type Tuple } from './index';

/** Largest trace file the viewer reads. */
export const MAX_TRACE_BYTES = 64 * 1024 * 1024;
/** Most events the viewer predicts. */
export const MAX_TRACE_EVENTS = 1_000_000;

/** One recorded event (the fields the viewer uses). */
export interface TraceEvent {
  seq?: number;
  saddr: string;
  sport: number;
  daddr: string;
  dport: number;
  listener: number;
  slot?: number | null;
  cpu?: number | null;
}

/** A trace file, as the schema describes it (the fields the viewer uses). */
export interface Trace {
  format: 'reuseport-lab-trace';
  version: 1;
  recorded?: string;
  command?: string;
  kernel: { release: string; profile: string };
  machine?: { cpus?: number; netns?: string };
  group: {
    proto: 'tcp' | 'udp';
    bind: string;
    port: number;
    listeners: number;
    v6only?: boolean;
    closed?: number[];
    incomingCpu?: { listener: number; cpu: number }[];
    bpf?: { kind: string; modulus?: number } | null;
    tcpMigrateReq?: boolean;
  };
  options: Record<string, unknown>;
  counts: { events: number; recorded?: number; perListener: number[]; lost?: number };
  events: TraceEvent[];
}

const ajv = new Ajv2020({ allErrors: true, strict: false });
const validate = ajv.compile(schema);

/** Checks a parsed file; returns the trace, or every problem naming its field (`/events/12/sport`). */
export function checkTrace(value: unknown): { trace: Trace; errors?: undefined } | { errors: string[]; trace?: undefined } {
  if (validate(value)) {
    const t = value as unknown as Trace;
    if (t.events.length > MAX_TRACE_EVENTS) return { errors: [`/events: ${t.events.length} events; the viewer reads at most ${MAX_TRACE_EVENTS}`] };
    return { trace: t };
  }
  const errors = (validate.errors ?? []).slice(0, 20).map((e) => {
    const where = e.instancePath || '(the top level)';
    const extra = e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})` : '';
    return `${where}: ${e.message ?? 'invalid'}${extra}`;
  });
  return { errors };
}

/** The model's description of the trace's group with the IPv4 key `key`. */
export function traceGroup(trace: Trace, key: number): GroupInput {
  const g = trace.group;
  const bpf = g.bpf ?? null;
  const program = bpf?.kind === 'cpu' ? { kind: 'cpu' as const } : bpf?.kind === 'payload-mod' && bpf.modulus ? { kind: 'payload_mod' as const, modulus: bpf.modulus } : null;
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
  } as GroupInput;
}

/** What the model says for one event. */
export const enum Predicted {
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
  /** Events per chunk between yields to the page. @default 2000 */
  chunk?: number;
}

function tupleOf(e: TraceEvent): Tuple {
  return { saddr: e.saddr, sport: e.sport, daddr: e.daddr, dport: e.dport } as unknown as Tuple;
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
  const chunk = opts.chunk ?? 2000;
  const known = opts.key !== undefined;
  const a = new Group(trace.kernel.release, traceGroup(trace, opts.key ?? 0));
  const payloadProgram = trace.group.bpf?.kind === 'payload-mod';
  try {
    for (let i = 0; i < n; i += chunk) {
      if (opts.signal?.aborted) throw new DOMException('The prediction was cancelled.', 'AbortError');
      const end = Math.min(n, i + chunk);
      for (let j = i; j < end; j++) {
        const e = trace.events[j]!;
        const t = tupleOf(e);
        const cpu = e.cpu ?? 0;
        const payload = payloadProgram ? (e.seq ?? j) >>> 0 : null;
        const x = a.explain(t, cpu, payload);
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
