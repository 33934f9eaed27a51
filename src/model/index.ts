/**
 * The model facade: the only TypeScript that talks to the wasm module.
 *
 * Everything here converts and forwards; every kernel rule (hash, group,
 * selection) lives in the Rust crate `reuseport-model`. The types come from
 * the Rust types (`src/model/generated/`, written by scripts/gen-types.sh).
 */
import init, {
  Group as WasmGroup,
  Host as WasmHost,
  V4Batch as WasmV4Batch,
  initSync,
  maxGroupMembers as wasmMaxGroupMembers,
  maxListeners as wasmMaxListeners,
  modelVersion,
  parseBind as wasmParseBind,
  parseCbpf as wasmParseCbpf,
  parseTuples as wasmParseTuples,
  profiles as wasmProfiles,
  resolveNotes as wasmResolveNotes,
  resolveProfile as wasmResolveProfile,
  type Dispatched,
  type HostChange,
  type ParsedBind,
} from './pkg/reuseport.js';
import { wasmLoader } from './load';
import type { Change } from './generated/Change';
import type { Explain } from './generated/Explain';
import type { LineAnswer } from './generated/LineAnswer';
import type { EbpfRun } from './generated/EbpfRun';
import type { MapFill } from './generated/MapFill';
import type { ParsedLine } from './generated/ParsedLine';
import type { PacketCtx } from './generated/PacketCtx';
import type { GroupSpec } from './generated/GroupSpec';
import type { GroupSummary } from './generated/GroupSummary';
import type { Keys } from './generated/Keys';
import type { Member } from './generated/Member';
import type { Profile } from './generated/Profile';
import type { Tuple } from './generated/Tuple';
import type { Note } from './generated/message/Note';
import type { Program } from './generated/Program';
import type { Call } from './generated/Call';
import type { CallLog } from './generated/CallLog';
import type { CallResult } from './generated/CallResult';
import type { Layout } from './generated/Layout';
import type { LookupExplain } from './generated/LookupExplain';
import type { LookupRules } from './generated/LookupRules';
import type { Packet } from './generated/Packet';
import type { Proto } from './generated/Proto';
import type { Refusal } from './generated/message/Refusal';

export type { Call, CallLog, CallResult, Dispatched, HostChange, LookupExplain, LookupRules, Packet, Refusal };
export type { Change, Explain, GroupSpec, GroupSummary, Keys, Member, Profile, Tuple, LineAnswer, ParsedLine, ParsedBind };
export type { CpuPin } from './generated/CpuPin';
export type { Program } from './generated/Program';
export type { Pick as SelectionPath } from './generated/Pick';
export type { HashTrace } from './generated/HashTrace';
export type { JhashCall } from './generated/JhashCall';
export type { RingStep } from './generated/RingStep';
export type { ReservoirStep } from './generated/ReservoirStep';
export type { Proto } from './generated/Proto';

/** The listener value meaning "no socket" in batch output. */
export const NO_LISTENER = 0xffffffff;

/** The required part of a group; everything else has the kernel's default. */
export type GroupInput = Pick<GroupSpec, 'proto' | 'listeners' | 'bind' | 'port'> & Partial<GroupSpec>;

/** Fills a group description's optional fields (no options set, nothing closed). */
export function groupSpec(input: GroupInput): GroupSpec {
  return {
    v6only: false,
    keys: { v4: 0, v6Outer: 0, v6Inner: 0 },
    closed: [],
    shutdown: [],
    tcpMigrateReq: false,
    incomingCpu: [],
    connected: [],
    program: null,
    ...input,
  };
}

/** A reuseport group held in wasm memory. Call {@link Group.dispose} when done. */
export class Group {
  #inner: WasmGroup;

  /** @param kernel a profile (`6.18`) or any release string (`5.19.3`). */
  constructor(kernel: string, spec: GroupInput) {
    this.#inner = new WasmGroup({ kernel, group: groupSpec(spec) });
  }

  /**
   * The kernel's whole path for one packet received on `cpu`, carrying `payload`
   * (its first four bytes as a big-endian number, read by payload programs).
   * Throws when the packet does not reach the group.
   */
  explain(tuple: Tuple, cpu = 0, payload: number | null = null): Explain {
    if (payload === null) return this.#inner.explain(tuple, cpu);
    return this.#inner.explainCtx(tuple, { cpu, payload });
  }

  /**
   * The kernel's whole path for one packet in a full context (the payload's bytes, for programs that read them);
   * throws the model's sentence when the run does not decide.
   */
  explainCtx(tuple: Tuple, ctx: PacketCtx): Explain {
    return this.#inner.explainCtx(tuple, ctx);
  }

  /** The run of the group's eBPF program on this packet, also when it does not decide (where `explainCtx` throws), or null without an eBPF program. */
  ebpfRun(tuple: Tuple, ctx: PacketCtx): EbpfRun | null {
    return this.#inner.ebpfRun(tuple, ctx);
  }

  /** The maps of the group's eBPF program after its run on this packet (to give the next packet's group), or null without an eBPF program. */
  ebpfMapsAfter(tuple: Tuple, ctx: PacketCtx): MapFill[] | null {
    return this.#inner.ebpfMapsAfter(tuple, ctx);
  }

  /** Explains every line of pasted text in one call; bad lines carry their error. */
  explainText(text: string, cpu = 0): LineAnswer[] {
    return this.#inner.explainText(text, cpu);
  }

  /** The group at a glance. */
  summary(): GroupSummary {
    return this.#inner.summary();
  }

  /** Every member ever joined, indexed by listener number. */
  members(): Member[] {
    return this.#inner.members();
  }

  /** `socks[]` (length `max_socks`, {@link NO_LISTENER} for empty slots); empty before groups existed. */
  socks(): Uint32Array {
    return this.#inner.socks();
  }

  /** Listening members in slot order, or chain order (newest first) in the reservoir era. */
  listening(): Uint32Array {
    return this.#inner.listening();
  }

  /** A new socket joins. */
  join(): Change {
    return this.#inner.join();
  }

  /** Closes a listener. */
  close(listener: number): Change {
    return this.#inner.close(listener);
  }

  /** Shuts a TCP listener down. */
  shutdown(listener: number): Change {
    return this.#inner.shutdown(listener);
  }

  /** Listens again after a shutdown. */
  relisten(listener: number): Change {
    return this.#inner.relisten(listener);
  }

  /** Sets SO_INCOMING_CPU, or clears it with `undefined`. */
  setIncomingCpu(listener: number, cpu: number | undefined): Change {
    return this.#inner.setIncomingCpu(listener, cpu);
  }

  /** Connects a UDP member. */
  connect(listener: number): Change {
    return this.#inner.connect(listener);
  }

  /** Replaces the per-boot hash keys. */
  setKeys(keys: Keys): void {
    this.#inner.setKeys(keys);
  }

  /** Whether batches for this group run the vectorised loop. */
  batchIsVectorised(): boolean {
    return this.#inner.batchIsVectorised();
  }

  /**
   * Selects for the first `len` packets of `batch`; results land in `batch.out()`.
   * Views taken before this call stay valid (it does not allocate).
   */
  selectBatchV4(batch: V4Batch, len: number, cpu = 0): void {
    this.#inner.selectBatchV4(batch.raw, len, cpu);
  }

  /** Frees the wasm memory. */
  dispose(): void {
    this.#inner.free();
  }
}

/**
 * A host's sockets held in wasm memory, stepped by calls as a program makes
 * them (`socket`, `setsockopt`, `bind`, `listen`, `close`): the model's
 * `Host`. Every answer (a refusal, a group's change, the full lookup of a
 * packet) is the model's. Call {@link Host.dispose} when done.
 */
export class Host {
  #inner: WasmHost;

  /**
   * Replays a layout: a call log, the earlier form (converted), or `{ group }`, the shorthand for the calls a
   * program makes for one group (listener `i` is socket `i`). Throws naming the call and field at fault. `wasm`:
   * the package's Host to use (the core one; the lookup package, which has the same, for its own pages).
   */
  constructor(kernel: string, layout: CallLog | Layout | { group: GroupInput }, wasm: typeof WasmHost = WasmHost) {
    this.#inner = 'group' in layout ? wasm.fromGroup({ kernel, group: groupSpec(layout.group) }) : new wasm({ kernel, layout });
  }

  /** One more call: null for success, or the kernel's refusal. Throws when the model cannot replay it. */
  apply(call: Call): Refusal | null {
    return this.#inner.apply(call);
  }

  /** What the last call did to a reuseport group (members named by socket), or undefined. */
  lastChange(): HostChange | undefined {
    return this.#inner.lastChange();
  }

  /** A new boot: the same sockets, new hash keys. */
  setKeys(keys: Keys): void {
    this.#inner.setKeys(keys);
  }

  /** Each call's answer, in call order: null for ok, else the kernel's refusal. */
  answers(): (Refusal | null)[] {
    return this.#inner.answers();
  }

  /** Every call applied so far, with the host's settings (an earlier-form layout as the model converted it), so a page shows and edits calls only. */
  calls(): CallLog {
    return this.#inner.calls();
  }

  /** Each socket's last bind()/listen()/attach answer and where it is now. */
  results(): CallResult[] {
    return this.#inner.results();
  }

  /** The lookup rules of the profile. */
  rules(): LookupRules {
    return this.#inner.rules();
  }

  /** The full lookup of one packet: tables walked, candidates, the group's pick, the receiving socket. */
  lookup(packet: Packet): LookupExplain {
    return this.#inner.lookup(packet);
  }

  /** One packet's lookup as an animation needs it: the receiving socket, the kernel's hash for the choice, the group's record. */
  dispatch(packet: Packet): Dispatched {
    return this.#inner.dispatch(packet);
  }

  /** The receiving socket of each of the first `len` packets of `batch` ({@link NO_LISTENER} for none) in `batch.out()`. */
  lookupBatchV4(batch: V4Batch, len: number, proto: Proto, cpu = 0): void {
    this.#inner.lookupBatchV4(batch.raw, len, proto, cpu);
  }

  /** The group socket `fd` is in now, if any. */
  groupOf(fd: number): number | undefined {
    return this.#inner.groupOf(fd);
  }

  /** Group `g` at a glance. */
  groupSummary(g: number): GroupSummary {
    return this.#inner.groupSummary(g);
  }

  /** Group `g`'s members by member number. */
  groupMemberStates(g: number): Member[] {
    return this.#inner.groupMemberStates(g);
  }

  /** The socket of each of group `g`'s members, by member number. */
  groupMembers(g: number): Uint32Array {
    return this.#inner.groupMembers(g);
  }

  /** Group `g`'s listening members as sockets, in slot order. */
  groupListening(g: number): Uint32Array {
    return this.#inner.groupListening(g);
  }

  /** The receiving sockets on a protocol, address and port, in the order a lookup walks them. */
  receivingOn(proto: Proto, addr: string, port: number): Uint32Array {
    return this.#inner.receivingOn(proto, addr, port);
  }

  /** Frees the wasm memory. */
  dispose(): void {
    this.#inner.free();
  }
}

/**
 * IPv4 packets in wasm memory, structure of arrays: addresses as host-order
 * numbers (127.0.0.1 is 0x7f000001), ports as numbers. Take the views after
 * creating every batch: creating one may grow wasm memory and detach older views.
 */
export class V4Batch {
  readonly raw: WasmV4Batch;
  constructor(capacity: number) {
    this.raw = new WasmV4Batch(capacity);
  }
  /** Views into wasm memory, in the documented layout. */
  views(): { saddr: Uint32Array; sport: Uint16Array; daddr: Uint32Array; dport: Uint16Array; out: Uint32Array } {
    return { saddr: this.raw.saddr(), sport: this.raw.sport(), daddr: this.raw.daddr(), dport: this.raw.dport(), out: this.raw.out() };
  }
  dispose(): void {
    this.raw.free();
  }
}

/** Every kernel profile, oldest first. */
export function profiles(): Profile[] {
  return wasmProfiles();
}

/** The profile a kernel string resolves to; throws naming the known profiles. */
export function resolveProfile(kernel: string): Profile {
  return wasmResolveProfile(kernel);
}

/** What reading a kernel string involved: a release between profiles, a distribution build (empty when it does not resolve). */
export function resolveNotes(kernel: string): Note[] {
  try {
    return wasmResolveNotes(kernel);
  } catch {
    return [];
  }
}

/** The most members a reuseport group holds from 4.6 (32768: `socks[]` stops doubling there). */
export function maxGroupMembers(): number {
  return wasmMaxGroupMembers();
}

/** The most listeners the model builds (a 3.9–4.5 chain, bounded by the default `fs.nr_open`). */
export function maxListeners(): number {
  return wasmMaxListeners();
}

/** The ephemeral port range a kernel's connecting clients draw their source port from (`ip_local_port_range`'s default). */
export function ephemeralRange(kernel: string): { low: number; high: number } {
  const { low, high } = resolveProfile(kernel).lookup.defaultPortRange;
  return { low, high };
}

/** Parses pasted tuple text with the model's parser. */
export function parseTuples(text: string): ParsedLine[] {
  return wasmParseTuples(text);
}

/** Parses a bound address with an optional port (`0.0.0.0`, `[::1]:8080`); throws naming the problem. */
export function parseBind(text: string): ParsedBind {
  return wasmParseBind(text);
}

/**
 * Reads a classic BPF program from `bpf_asm` text or the C array `tcpdump -dd` prints
 * (`{ 0x28, 0, 0, 0x0000000c },`); throws an error naming the line.
 */
export function parseCbpf(text: string): Program {
  return wasmParseCbpf(text) as Program;
}

/** The model crate's version. */
export function version(): string {
  return modelVersion();
}

const core = wasmLoader({ init, initSync });

/** Loads the wasm module once (browser: fetched next to the bundle). */
export const loadModel: () => Promise<void> = core.load;

/** Loads the wasm module from bytes already in hand (Node, tests, benchmarks). */
export const loadModelSync: (bytes: BufferSource) => void = core.loadSync;

/** Parses a dotted-quad IPv4 address to a host-order number; undefined when it is not one. */
export function ipv4ToNumber(s: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return undefined;
  const p = m.slice(1).map(Number);
  if (p.some((x) => x > 255)) return undefined;
  return ((p[0]! << 24) | (p[1]! << 16) | (p[2]! << 8) | p[3]!) >>> 0;
}

/** Formats an IPv4 host-order number as dotted quad (for labels). */
export function ipv4ToString(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}
