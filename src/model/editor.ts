/**
 * The program editor's readers, from the lookup package: a program in any
 * form people have (with the line of each instruction), datagram lines,
 * and QUIC packets. Each is the model's; this file only forwards.
 */
import {
  cidProgram as wasmCidProgram,
  parseDatagrams as wasmParseDatagrams,
  quicPacket as wasmQuicPacket,
  quicReload as wasmQuicReload,
  readProgram as wasmReadProgram,
  type DatagramLine,
  type ReadProgram,
} from './pkg-lookup/reuseport.js';
import type { QuicPacketSpec } from './generated/QuicPacketSpec';
import type { ReloadReport } from './generated/ReloadReport';
import type { ReloadSpec } from './generated/ReloadSpec';

export type { DatagramLine, ReadProgram, QuicPacketSpec };

/** Reads a program (JSON, bpf_asm, tcpdump -dd or -ddd); throws a sentence starting `line N:`. Needs the lookup package. */
export function readProgram(text: string): ReadProgram {
  return wasmReadProgram(text);
}

/** Reads datagram lines (`SADDR:SPORT DADDR:DPORT [payload=HEX] [cpu=N]`), at most `max`; a bad line gives its error. */
export function parseDatagrams(text: string, max: number): DatagramLine[] {
  return wasmParseDatagrams(text, max);
}

/** A QUIC packet's bytes as hex (the model's builder, RFC 9000 §17). */
export function quicPacket(spec: QuicPacketSpec): string {
  return wasmQuicPacket(spec);
}

/** The QUIC reload scenario in the model: `spec` on kernel `kernel` under the IPv4 hash key `key`. */
export function quicReload(spec: ReloadSpec, kernel: string, key: number): ReloadReport {
  return wasmQuicReload(spec, kernel, key >>> 0);
}

/** The connection-ID program (nginx's helper logic in classic BPF), as bpf_asm text. */
export function cidProgram(): string {
  return wasmCidProgram();
}

/** A line number from a reader's error (`line 3: …`), or null. */
export function lineOf(message: string): number | null {
  const m = /^line (\d+):/.exec(message);
  return m ? Number(m[1]) : null;
}
