/**
 * "Your server, replayed": a trace in the project's format (`reuseport-agent
 * record`, or `observe --trace`, which adds the kernel's own hash to every
 * record) as the dispatch scene's input. Each record is one SYN or datagram
 * that the kernel gave to a listener; the scene sends it there, and asks the
 * model (the Host made of the trace's group) for its own answer beside it. No
 * DOM, no kernel rule: the records are data, the answers the model's.
 */
import { ipv4ToNumber, type GroupInput } from '../../model/index';
import { traceGroup, type Trace } from '../../model/trace';
import type { Client } from './clients';

/** A trace ready to replay: its records, their clients, and the key the model hashes with. */
export interface Replay {
  /** The file's name, as the page says it. */
  name: string;
  trace: Trace;
  /** The IPv4 key (`secret + net_hash_mix`) the model hashes with; null: not known, so the model's answers are not asked. */
  key: number | null;
  /** One client per distinct source address, port and CPU, in order of first record. */
  clients: Client[];
  /** The client of each record. */
  clientOf: Int32Array;
  /** Where the records were sent (the first record's destination) and the group's port. */
  server: { addr: string; addrNum: number; port: number };
}

/** Why a trace cannot be replayed: a field, and what is wrong with it. */
export type ReplayRefusal = { field: string; problem: 'ipv6' | 'empty' | 'destination' };

/** The trace as a replay, or why it cannot be one (the scene draws IPv4 flows only). */
export function replayOf(trace: Trace, name: string, key: number | null): { replay: Replay } | { refused: ReplayRefusal } {
  const ev = trace.events;
  if (ev.length === 0) return { refused: { field: '/events', problem: 'empty' } };
  if (trace.group.bind.includes(':')) return { refused: { field: '/group/bind', problem: 'ipv6' } };
  const server = ev[0]!.daddr;
  const serverNum = ipv4ToNumber(server);
  if (serverNum === undefined) return { refused: { field: '/events/0/daddr', problem: 'ipv6' } };
  const clients: Client[] = [];
  const index = new Map<string, number>();
  const clientOf = new Int32Array(ev.length);
  for (let i = 0; i < ev.length; i++) {
    const e = ev[i]!;
    const addr = ipv4ToNumber(e.saddr);
    if (addr === undefined) return { refused: { field: `/events/${i}/saddr`, problem: 'ipv6' } };
    if (e.daddr !== server || e.dport !== trace.group.port) return { refused: { field: `/events/${i}/daddr`, problem: 'destination' } };
    const cpu = e.cpu ?? 0;
    const k = `${e.saddr} ${e.sport} ${cpu}`;
    let c = index.get(k);
    if (c === undefined) {
      c = clients.length;
      index.set(k, c);
      clients.push({ addr, saddr: e.saddr, sport: e.sport, cpu });
    }
    clientOf[i] = c;
  }
  return { replay: { name, trace, key, clients, clientOf, server: { addr: server, addrNum: serverNum, port: trace.group.port } } };
}

/** The model's group for a replay: the trace's group, field for field, with the replay's key (0 when none is known). */
export function replayGroup(r: Replay): GroupInput {
  return traceGroup(r.trace, r.key ?? 0);
}

/** The payload the model reads for record `i`: its number under a payload program (the datagram carries it), else none. */
export function replayPayload(r: Replay, i: number): number | null {
  return r.trace.group.bpf?.kind === 'payload-mod' ? (r.trace.events[i]!.seq ?? i) >>> 0 : null;
}

/** The kernel's record and the model's answer for one replayed SYN or datagram. */
export interface ReplayCheck {
  /** The record's number in the file, from 0. */
  record: number;
  /** The listener the kernel chose (listen-order number). */
  kernel: number;
  /** The model's listener for it (null: no socket); undefined when the key is not known. */
  model: number | null | undefined;
  /** The hash the kernel computed (observe --trace records it), and whether the model's is the same. */
  kernelHash: number | null;
  hashAgrees: boolean | null;
}

/** Counts of a replay so far. */
export interface ReplayTally {
  records: number;
  sent: number;
  agreed: number;
  /** Records whose model answer differs from the kernel's, by record number. */
  disagreed: number[];
  /** Records the model was not asked about (no key). */
  unchecked: number;
  /** Records whose kernel hash the model's differs from. */
  hashDiffers: number[];
}

export function emptyTally(records: number): ReplayTally {
  return { records, sent: 0, agreed: 0, disagreed: [], unchecked: 0, hashDiffers: [] };
}

/** Adds one checked record to the tally. */
export function tallyCheck(t: ReplayTally, c: ReplayCheck): void {
  t.sent++;
  if (c.model === undefined) t.unchecked++;
  else if (c.model === c.kernel) t.agreed++;
  else t.disagreed.push(c.record);
  if (c.hashAgrees === false) t.hashDiffers.push(c.record);
}

/** The group a replay rebuilds its scene from, as the options of a group (kept for the Settings form). */
export function replayKernel(r: Replay): string {
  return r.trace.kernel.profile;
}
