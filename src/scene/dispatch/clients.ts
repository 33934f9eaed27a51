/**
 * Clients of the scene: addresses and source ports drawn from the seed, or
 * a user-given list. Each client is one flow (one 4-tuple) received on one
 * CPU (as RSS would steer it).
 */
import { ipv4ToNumber, ipv4ToString, parseTuples } from '../../model/index';
import { Rng, mix32 } from './rng';

/** The server address packets are sent to, and the group's port. */
export const SERVER = { addr: '10.0.0.1', addrNum: 0x0a000001, port: 8080 } as const;

export interface Client {
  /** Host-order IPv4 address (127.0.0.1 is 0x7f000001). */
  addr: number;
  saddr: string;
  sport: number;
  /** The CPU its packets are received on. */
  cpu: number;
}

/**
 * `count` clients from `seed`, spread over `cpus` CPUs, each with a source
 * port of `ports` (the kernel's default ephemeral range, `ephemeralRange` of
 * the model facade).
 */
export function makeClients(seed: number, count: number, cpus: number, ports: { low: number; high: number }): Client[] {
  const rng = new Rng(mix32(seed, 0xc11e));
  const out: Client[] = [];
  for (let i = 0; i < count; i++) {
    const r = rng.u32();
    const addr = (((198 << 24) | (18 << 16)) + (r & 0x1ffff) + 1) >>> 0; // 198.18.0.0/15, benchmarking range
    const sport = ports.low + rng.below(ports.high - ports.low + 1);
    out.push({ addr, saddr: ipv4ToString(addr), sport, cpu: rng.below(Math.max(1, cpus)) });
  }
  return out;
}

/**
 * The line (from 1) of the first client past `max` in a client list (blank
 * lines and # comments are not clients), or undefined when there are at most
 * `max`. It stops there, so a pasted million lines costs only the first few.
 */
export function firstLinePast(text: string, max: number): number | undefined {
  let given = 0;
  let line = 0;
  for (let at = 0; at <= text.length; ) {
    const end = text.indexOf('\n', at);
    const stop = end === -1 ? text.length : end;
    line++;
    const t = text.slice(at, stop).trim();
    if (t !== '' && !t.startsWith('#') && ++given > max) return line;
    at = stop + 1;
  }
  return undefined;
}

/**
 * Clients from text, one per line: `ADDR PORT` or `ADDR:PORT` (IPv4), parsed
 * by the model's tuple parser. Returns the clients and the problems by line;
 * more than `max` client lines are refused before any is parsed (`tooMany`:
 * the line of the first one past `max`), so a pasted million lines cannot
 * bypass the clients bound or stall the page.
 */
export function parseClients(
  text: string,
  cpus: number,
  seed: number,
  max: number,
): { clients: Client[]; errors: string[]; tooMany?: { line: number; max: number } } {
  const past = firstLinePast(text, max);
  if (past !== undefined) return { clients: [], errors: [], tooMany: { line: past, max } };
  const lines = text.split('\n');
  const withServer = lines.map((l) => {
    const t = l.trim();
    if (t === '' || t.startsWith('#')) return l;
    return t.includes(' ') ? `${t} ${SERVER.addr} ${SERVER.port}` : `${t} ${SERVER.addr}:${SERVER.port}`;
  });
  const rng = new Rng(mix32(seed, 0xc9b0));
  const clients: Client[] = [];
  const errors: string[] = [];
  for (const p of parseTuples(withServer.join('\n'))) {
    if (p.error !== undefined) {
      errors.push(`Line ${p.line}: ${p.error}`);
      continue;
    }
    const addr = ipv4ToNumber(p.tuple.saddr);
    if (addr === undefined) {
      errors.push(`Line ${p.line}: only IPv4 clients are shown`);
      continue;
    }
    clients.push({ addr, saddr: p.tuple.saddr, sport: p.tuple.sport, cpu: rng.below(Math.max(1, cpus)) });
  }
  return { clients, errors };
}
