/**
 * The program editor's scene: the group as calls, the QUIC flows the
 * generator draws, and the model's answers as rows. No DOM, and no kernel
 * rule: the calls are written down for the model to replay, the packets'
 * bytes are the model's (`quicPacket`), and every destination, return value
 * and outcome shown is one the model reported.
 */
import type { Call } from '../model/generated/Call';
import type { CallLog } from '../model/generated/CallLog';
import type { Explain } from '../model/generated/Explain';
import type { LookupExplain } from '../model/generated/LookupExplain';
import type { Program } from '../model/generated/Program';
import type { Refusal } from '../model/generated/message/Refusal';
import type { QuicPacketSpec } from '../model/generated/QuicPacketSpec';
import { Rng } from './dispatch/rng';

/** The most sockets the editor's group has (a bound on input; the kernel takes up to 32768). */
export const MAX_SOCKETS = 64;
/** The most datagram lines the editor routes at once. */
export const MAX_DATAGRAMS = 512;
/** The most flows one press of the generator adds. */
export const MAX_FLOWS = 64;

/** The group the reader describes. */
export interface EditorGroup {
  proto: 'udp' | 'tcp';
  /** How many sockets bind the address, 1 to {@link MAX_SOCKETS}. */
  sockets: number;
  /** Whether every socket sets SO_REUSEPORT before bind(). */
  reuseport: boolean;
  /** The bound address (`0.0.0.0`, `127.0.0.1`, `::` …). */
  bind: string;
  port: number;
}

/** The calls of the group: each socket made, SO_REUSEPORT set (if asked), bound, listening (TCP); then the program attached from socket 0. */
export function editorCalls(g: EditorGroup, program: Program | null): Call[] {
  const family = g.bind.includes(':') ? 'inet6' : 'inet';
  const calls: Call[] = [];
  for (let fd = 0; fd < g.sockets; fd++) {
    calls.push({ call: 'socket', family, proto: g.proto, uid: 0 });
    if (g.reuseport) calls.push({ call: 'setsockopt', fd, opt: { reuseport: true } });
    calls.push({ call: 'bind', fd, addr: g.bind, port: g.port });
    if (g.proto === 'tcp') calls.push({ call: 'listen', fd });
  }
  if (program) calls.push({ call: 'setsockopt', fd: 0, opt: { attachReuseport: program } });
  return calls;
}

/** The call log the model replays: the calls, keys given (a boot's secret), no sk_lookup. */
export function editorLog(g: EditorGroup, program: Program | null, secret: number): CallLog {
  return {
    calls: editorCalls(g, program),
    skLookup: null,
    keys: { v4: secret >>> 0, v6Outer: secret >>> 0, v6Inner: 0 },
    ephemeral: null,
    tcpMigrateReq: false,
    devices: [],
  };
}

/** Where a refused attach points in the reader's text: the line of the instruction the rule names, if it names one. */
export function refusalLine(r: Refusal, lines: readonly number[]): number | null {
  const rule = r.rule as { kind: string; pc?: number };
  if (typeof rule.pc === 'number') return lines[rule.pc] ?? null;
  // A program with no `ret` at its end: the last instruction's line.
  if (rule.kind === 'cbpf_no_ret' && lines.length > 0) return lines[lines.length - 1]!;
  return null;
}

/** The QUIC packets the generator adds. */
export interface QuicFlows {
  /** Which packet each flow sends. */
  form: QuicPacketSpec['form'];
  /** How many flows (each its own source port), 1 to {@link MAX_FLOWS}. */
  flows: number;
  /** The clients' address. */
  saddr: string;
  /** The first flow's source port; flow i uses `sport + i`. */
  sport: number;
  /** The server's address and port (the datagrams' destination). */
  daddr: string;
  dport: number;
  /** Destination Connection ID length in bytes (0 to 20; nginx issues 20 and its helper reads the first 8). */
  cidLength: number;
  /**
   * For Handshake and short packets: write flow i's server-issued ID with
   * first byte `i mod sockets` (the connection-ID program's convention);
   * otherwise every byte is random.
   */
  cidNamesSocket: boolean;
  /** The group's size, for {@link cidNamesSocket}. */
  sockets: number;
  seed: number;
  /**
   * With {@link cidNamesSocket}: the bytes that open flow i's server-issued
   * ID are `cidKeys[i mod cidKeys.length]` instead of the socket byte (an
   * eBPF program's map key, as nginx writes its socket's key into the IDs
   * it issues). Absent or empty: the socket byte.
   */
  cidKeys?: readonly (readonly number[])[];
}

/** One generated flow: its tuple and the packet to build. */
export interface QuicFlow {
  saddr: string;
  sport: number;
  daddr: string;
  dport: number;
  spec: QuicPacketSpec;
}

/** The flows of one press of the generator: random IDs from the seed, the socket byte when asked. */
export function quicFlows(o: QuicFlows): QuicFlow[] {
  const rng = new Rng(o.seed);
  const bytes = (n: number) => Array.from({ length: n }, () => rng.below(256));
  const out: QuicFlow[] = [];
  for (let i = 0; i < Math.min(o.flows, MAX_FLOWS); i++) {
    const dcid = bytes(o.cidLength);
    if (o.cidNamesSocket && o.form !== 'initial' && dcid.length > 0) {
      const key = o.cidKeys && o.cidKeys.length > 0 ? o.cidKeys[i % o.cidKeys.length]! : [i % Math.max(1, o.sockets)];
      dcid.splice(0, Math.min(key.length, dcid.length), ...key.slice(0, dcid.length));
    }
    out.push({
      saddr: o.saddr,
      sport: (o.sport + i) & 0xffff,
      daddr: o.daddr,
      dport: o.dport,
      spec: { form: o.form, dcid, scid: bytes(8), packetNumber: i },
    });
  }
  return out;
}

/** An endpoint as a tuple line writes it. */
export function endpoint(addr: string, port: number): string {
  return addr.includes(':') ? `[${addr}]:${port}` : `${addr}:${port}`;
}

/** A datagram line for a flow and its packet's hex (the model's bytes). */
export function datagramLine(f: QuicFlow, hex: string): string {
  return `${endpoint(f.saddr, f.sport)} ${endpoint(f.daddr, f.dport)} payload=${hex}`;
}

/** One routed datagram, as the table shows it. */
export interface RouteRow {
  /** The line of the packets field. */
  line: number;
  from: string;
  /** The payload's first bytes in hex and its length, or "" when none. */
  payload: string;
  payloadLength: number;
  /** The socket that receives it (index in the group, = fd), or null. */
  socket: number | null;
  /** The program's return, as the model reported it (null when no program ran). */
  returned: LookupExplainProgram['returned'] | null;
  /** The program's outcome, as the model reported it. */
  outcome: LookupExplainProgram['outcome'] | null;
}

type Pick = NonNullable<LookupExplain['group']>['explain']['pick'];
/** The program step of a group's pick. */
export type LookupExplainProgram = Extract<Pick, { kind: 'program' }>;

/** Bytes of a payload shown in a row before it is cut. */
export const PAYLOAD_SHOWN = 8;

/** A payload's first bytes as hex, with `…` when it is longer. */
export function payloadHead(bytes: readonly number[]): string {
  const head = bytes
    .slice(0, PAYLOAD_SHOWN)
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('');
  return bytes.length > PAYLOAD_SHOWN ? `${head}…` : head;
}

/** The payload's bytes as the model holds them: a number stands for its four bytes, big-endian. */
export function payloadBytes(p: number[] | number | null | undefined): number[] {
  if (p === null || p === undefined) return [];
  if (typeof p === 'number') return [p >>> 24, (p >>> 16) & 0xff, (p >>> 8) & 0xff, p & 0xff];
  return p;
}

/** A routed datagram's row from the model's lookup. */
export function routeRow(line: number, x: LookupExplain): RouteRow {
  const t = x.packet.tuple;
  const bytes = payloadBytes(x.packet.ctx.payload as number[] | number | null);
  const pick = x.group?.explain.pick;
  const prog = pick?.kind === 'program' ? pick : null;
  return {
    line,
    from: endpoint(t.saddr, t.sport),
    payload: payloadHead(bytes),
    payloadLength: bytes.length,
    socket: x.socket ?? null,
    returned: prog ? prog.returned : null,
    outcome: prog ? prog.outcome : null,
  };
}

/** A datagram's row from a group's record (the eBPF path: the group is the editor's, listener i = socket i). */
export function explainRow(line: number, e: Explain, payload: number[] | number | null | undefined): RouteRow {
  const bytes = payloadBytes(payload);
  const prog = e.pick.kind === 'program' ? e.pick : null;
  return {
    line,
    from: endpoint(e.tuple.saddr, e.tuple.sport),
    payload: payloadHead(bytes),
    payloadLength: bytes.length,
    socket: e.listener ?? null,
    returned: prog ? prog.returned : null,
    outcome: prog ? prog.outcome : null,
  };
}

/** Datagrams per socket (every socket of the group, those with none included), and those no socket received. */
export function perSocket(rows: readonly RouteRow[], sockets: number): { counts: number[]; dropped: number } {
  const counts = new Array<number>(sockets).fill(0);
  let dropped = 0;
  for (const r of rows) {
    if (r.socket === null || r.socket >= sockets) dropped++;
    else counts[r.socket]!++;
  }
  return { counts, dropped };
}
