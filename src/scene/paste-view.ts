/**
 * The paste analyser's answers as facts to draw: a CSV column's role as one
 * select value and back, each listener's count against its range over random
 * boots, and each socket of a pasted layout with its calls' answers. No DOM
 * and no words: render/paste-*.ts says them.
 */
import type { Role, SpreadAnswer } from '../model/paste';
import type { LayoutAnswered } from '../model/paste-protocol';

/** A column role as one select value (`endpoint:client`). */
export function roleKey(r: Role): string {
  return 'side' in r ? `${r.kind}:${r.side}` : r.kind;
}

/** The role a select value ({@link roleKey}) stands for. */
export function roleOf(key: string): Role {
  const [kind, side] = key.split(':') as [string, string | undefined];
  return (side ? { kind, side } : { kind }) as Role;
}

/** The 5th and 95th percentiles of one listener's count over random boots. */
export interface Band {
  p5: number;
  p95: number;
}

/** One listener's count, and where it falls against its range over random boots (null: no range). */
export interface CountFact {
  listener: number;
  count: number;
  range: (Band & { place: 'below' | 'within' | 'above' }) | null;
}

/**
 * Each listener's count against its range: the one `band` every listener shares when the group is exchangeable,
 * else the listener's own row of `spread` when there is one.
 */
export function countFacts(counts: readonly number[], band: Band | undefined, spread: SpreadAnswer | undefined): CountFact[] {
  return counts.map((count, listener) => {
    const b = band ?? spread?.spread.perListener.find((x) => x.listener === listener);
    if (!b) return { listener, count, range: null };
    const place = count < b.p5 ? 'below' : count > b.p95 ? 'above' : 'within';
    return { listener, count, range: { p5: b.p5, p95: b.p95, place } };
  });
}

type SocketResult = LayoutAnswered['results'][number];

/** One socket of a pasted layout: where it is bound, its calls' answers, its group and what it receives. */
export interface SocketFact {
  socket: number;
  /** `addr:port`, the IPv6 address in brackets. */
  where: string;
  bind: SocketResult['bind'];
  /** The listen call's answer; `undefined` for UDP, which makes none. */
  listen: SocketResult['listen'] | undefined;
  /** Its reuseport group and member number, when it is in one. */
  member: { group: number; member: number } | null;
  /** What it receives under the secret (null: no secret given). */
  count: number | null;
}

/** The most socket rows drawn (a layout of more shows its first ones). */
export const MAX_SOCKET_ROWS = 4096;

/** The layout's sockets as facts, the first {@link MAX_SOCKET_ROWS}. */
export function socketFacts(a: LayoutAnswered): SocketFact[] {
  return a.results.slice(0, MAX_SOCKET_ROWS).map((r) => ({
    socket: r.socket,
    where: r.family === 'inet6' ? `[${r.addr}]:${r.port}` : `${r.addr}:${r.port}`,
    bind: r.bind,
    listen: r.proto === 'tcp' ? r.listen : undefined,
    member: r.group === null ? null : { group: r.group, member: r.member ?? 0 },
    count: a.counts ? (a.counts[r.socket] ?? 0) : null,
  }));
}
