/**
 * The editor's map form for an eBPF object: one text per map, a line per
 * entry (`KEY VALUE`: which socket sits at which key), and the definition
 * of each map user space makes that the object does not define. No DOM and
 * no kernel rule: this file reads the reader's text into the model's
 * `MapFill` form; what a map accepts (a key past `max_entries`, a listener
 * the group does not have) is the model's to say (`ebpfCheckMaps`).
 */
import type { EbpfMaps, EbpfProgram, Holds, MapDef, MapFill } from '../model/ebpf';
import { fillKey, fillValue } from './ebpf-run-view';

/** The most entry lines one map's text holds (a bound on input). */
export const MAX_FILL_LINES = 4096;

/** One map in the form. */
export interface MapForm {
  name: string;
  /** User space makes it (the object only declares it, or does not name it): its definition is the reader's. */
  userMade: boolean;
  /** Its definition: the object's, or the reader's for a map user space makes. */
  def: MapDef;
  /** The entries, a line each: `KEY VALUE`. */
  text: string;
}

/** A map's entries as the form writes them: a line per entry. */
export function fillText(fill: MapFill | undefined): string {
  if (!fill) return '';
  return fill.entries.map(([k, v]) => `${fillKey(k)} ${fillValue(v)}`).join('\n');
}

/** The maps of `program` as the form starts them, from the model's starting maps. */
export function mapForms(program: EbpfProgram, start: EbpfMaps): MapForm[] {
  const text = (name: string) => fillText(start.maps.find((f) => f.map === name));
  const out: MapForm[] = [];
  for (const d of program.maps) {
    if (out.some((m) => m.name === d.name)) continue;
    const given = start.extraMaps.find((e) => e.name === d.name);
    out.push({ name: d.name, userMade: d.mapType === 0, def: d.mapType === 0 && given ? given : d, text: text(d.name) });
  }
  for (const e of start.extraMaps) {
    if (!out.some((m) => m.name === e.name)) out.push({ name: e.name, userMade: true, def: e, text: text(e.name) });
  }
  return out;
}

/** A number as the form takes it: decimal or `0x` hex, whole, at most 2^53 − 1 (JavaScript's exact integers). */
export function readNumber(tok: string): number | null {
  if (!/^(?:\d+|0x[0-9a-f]+)$/i.test(tok)) return null;
  const n = Number(tok);
  return Number.isSafeInteger(n) ? n : null;
}

type Entry = MapFill['entries'][number];
/** Why a line of a map's text is not an entry. */
export type FillProblem =
  | { kind: 'fields'; line: number }
  | { kind: 'key'; line: number; text: string }
  | { kind: 'value'; line: number; text: string }
  | { kind: 'lines'; max: number };

function readKey(tok: string): Entry[0] | null {
  if (/^hex:[0-9a-f]*$/i.test(tok)) return tok.slice(4);
  return readNumber(tok);
}

function readValue(tok: string, holds: Holds): Entry[1] | null {
  if (/^map:\S+$/.test(tok)) return { map: tok.slice(4) };
  if (/^hex:[0-9a-f]*$/i.test(tok)) return tok.slice(4);
  const n = readNumber(tok);
  if (n === null) return null;
  return holds === 'sockets' ? { socket: n } : n;
}

/**
 * Reads one map's text: a line per entry, `KEY VALUE` (blank and `#` lines
 * skipped). KEY is a number (decimal or 0x) or `hex:BYTES`; VALUE is a
 * listener number for a socket map, `map:NAME` for a map of maps, a number
 * or `hex:BYTES` otherwise.
 */
export function readFill(map: string, text: string, holds: Holds): { fill: MapFill } | { problem: FillProblem } {
  const entries: Entry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!.trim();
    if (l === '' || l.startsWith('#')) continue;
    if (entries.length >= MAX_FILL_LINES) return { problem: { kind: 'lines', max: MAX_FILL_LINES } };
    const f = l.split(/\s+/);
    if (f.length !== 2) return { problem: { kind: 'fields', line: i + 1 } };
    const k = readKey(f[0]!);
    if (k === null) return { problem: { kind: 'key', line: i + 1, text: f[0]! } };
    const v = readValue(f[1]!, holds);
    if (v === null) return { problem: { kind: 'value', line: i + 1, text: f[1]! } };
    entries.push([k, v]);
  }
  return { fill: { map, entries } };
}

/** The maps as the form says them, or the first map whose text is not entries (and why). */
export function formMaps(forms: readonly MapForm[], holds: (mapType: number) => Holds): EbpfMaps | { map: string; problem: FillProblem } {
  const maps: MapFill[] = [];
  for (const m of forms) {
    const r = readFill(m.name, m.text, holds(m.def.mapType));
    if ('problem' in r) return { map: m.name, problem: r.problem };
    if (r.fill.entries.length > 0) maps.push(r.fill);
  }
  return { maps, extraMaps: forms.filter((m) => m.userMade).map((m) => m.def) };
}

/**
 * A key number's bytes, most significant first, in `size` bytes (how nginx
 * writes its socket's key into a connection ID: ngx_quic_parse_uint64 reads
 * them back).
 */
export function keyBytesBE(key: number, size: number): number[] {
  let v = BigInt(key);
  const out = new Array<number>(size).fill(0);
  for (let i = size - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/**
 * The keys of the first socket map in the form, one per socket in socket
 * order, as the bytes a connection ID opens with ({@link keyBytesBE} of the
 * map's key size); null when no socket map holds a socket under a number key.
 */
export function socketKeys(forms: readonly MapForm[], holds: (mapType: number) => Holds): number[][] | null {
  for (const m of forms) {
    if (holds(m.def.mapType) !== 'sockets') continue;
    const r = readFill(m.name, m.text, 'sockets');
    if ('problem' in r) return null;
    const bySocket = new Map<number, number>();
    for (const [k, v] of r.fill.entries)
      if (typeof k === 'number' && typeof v === 'object' && 'socket' in v && !bySocket.has(v.socket)) bySocket.set(v.socket, k);
    if (bySocket.size === 0) continue;
    return [...bySocket.entries()].sort((a, b) => a[0] - b[0]).map(([, k]) => keyBytesBE(k, Math.min(m.def.keySize, 20)));
  }
  return null;
}
