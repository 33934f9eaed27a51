/**
 * eBPF objects for the pages, from the core package: the ELF reader, the
 * map types the model runs, the maps a group starts with, and the check of
 * the maps a reader filled. Each is the model's; this file only forwards.
 */
import {
  ebpfCheckMaps as wasmCheckMaps,
  ebpfDefaultMaps as wasmDefaultMaps,
  ebpfMapBounds as wasmMapBounds,
  ebpfMapTypeName as wasmMapTypeName,
  ebpfMapTypes as wasmMapTypes,
  ebpfMaxElfBytes as wasmMaxElfBytes,
  readEbpf as wasmReadEbpf,
  type EbpfMapBounds,
  type EbpfRead,
  type EbpfMapType,
  type EbpfMaps,
} from './pkg/reuseport.js';
import type { EbpfObject } from './generated/EbpfObject';
import type { EbpfProgram } from './generated/EbpfProgram';
import type { EbpfRun } from './generated/EbpfRun';
import type { Holds } from './generated/Holds';
import type { MapDef } from './generated/MapDef';
import type { MapFill } from './generated/MapFill';
import type { ElfError } from './generated/message/ElfError';
import type { MapRefusal } from './generated/message/MapRefusal';
import type { ProgKind } from './generated/ProgKind';

export type { EbpfMapBounds, EbpfMapType, EbpfMaps, EbpfObject, EbpfProgram, EbpfRead, EbpfRun, ElfError, Holds, MapDef, MapFill, MapRefusal, ProgKind };

/**
 * Reads the bytes of an ELF object clang wrote: the object, or the model's fact naming the section or instruction at fault
 * (`sayElfError` says it). Needs the core package.
 */
export function readEbpf(bytes: Uint8Array): EbpfRead {
  return wasmReadEbpf(bytes);
}

/** The largest object the reader reads, in bytes. */
export function ebpfMaxElfBytes(): number {
  return wasmMaxElfBytes();
}

/** The map types the model runs, with what their values are. */
export function ebpfMapTypes(): EbpfMapType[] {
  return wasmMapTypes();
}

/** The model's bounds on a map the reader defines: the largest key and value in bytes, the most entries. */
export function ebpfMapBounds(): EbpfMapBounds {
  return wasmMapBounds();
}

/** The uapi name of a map type number. */
export function ebpfMapTypeName(mapType: number): string {
  return wasmMapTypeName(mapType);
}

/** The maps a group of `sockets` listeners starts with for `program` (the rule `verify --program` fills live maps by). */
export function ebpfDefaultMaps(program: EbpfProgram, sockets: number): EbpfMaps {
  return wasmDefaultMaps(program, sockets);
}

/**
 * Why the maps as filled cannot be built for `program` in a group of `sockets` (the model's fact, naming the map and key;
 * `sayMapRefusal` says it), or null when they can.
 */
export function ebpfCheckMaps(program: EbpfProgram, maps: EbpfMaps, sockets: number): MapRefusal | null {
  return wasmCheckMaps(program, maps, sockets) ?? null;
}
