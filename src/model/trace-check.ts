/**
 * Checking a trace file (format v1, written by `reuseport-agent record`)
 * against the checked-in JSON Schema (compiled to code at build time by
 * site/trace-validator-plugin.mjs). No model here: the trace viewer runs
 * this in a worker, off the page's thread.
 */
import validate from 'virtual:trace-validator';

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
  /** The hash the kernel computed for it (`observe --trace` records it). */
  hash?: number;
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

/** Checks a parsed file; returns the trace, or every problem naming its field (`/events/12/sport`). */
export function checkTrace(value: unknown): { trace: Trace; errors?: undefined } | { errors: string[]; trace?: undefined } {
  if (validate<Trace>(value)) {
    const t = value;
    if (t.events.length > MAX_TRACE_EVENTS) return { errors: [`/events: ${t.events.length} events; the viewer reads at most ${MAX_TRACE_EVENTS}`] };
    return { trace: t };
  }
  const errors = (validate.errors ?? []).slice(0, 20).map((e) => {
    const where = e.instancePath || '(the top level)';
    const extra = e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : '';
    return `${where}: ${e.message ?? 'invalid'}${extra}`;
  });
  return { errors };
}
