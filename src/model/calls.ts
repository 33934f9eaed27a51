/**
 * Call logs, the one shape of a layout: the calls a program makes on its
 * sockets, in order (`socket`, `setsockopt`, `bind`, `listen`, `connect`,
 * `shutdown`, `close`), which the model replays and answers call by call.
 * These helpers only write calls down; every answer is the model's.
 */
import type { Call } from './generated/Call';
import type { CallLog } from './generated/CallLog';
import type { Family } from './generated/Family';
import type { Keys } from './generated/Keys';
import type { Proto } from './generated/Proto';
import type { SockOpt } from './generated/SockOpt';

export type { Call, CallLog, SockOpt };

/** One socket as a program sets it up: made, options set, bound, and (TCP) listening. */
export interface SocketSetup {
  family: Family;
  proto: Proto;
  addr: string;
  port: number;
  /** @default false */
  reuseaddr?: boolean;
  /** @default false */
  reuseport?: boolean;
  /** IPV6_V6ONLY (AF_INET6 only). @default false */
  v6only?: boolean;
  /** SO_BINDTODEVICE. @default none */
  device?: string | null;
  /** Owner UID. @default 0 */
  uid?: number;
  /** SO_INCOMING_CPU, set before bind. @default none */
  incomingCpu?: number | null;
  /** TCP: call listen() after bind(). @default true */
  listen?: boolean;
}

/** The calls that set up socket `fd` (the `fd`th socket call of its log). */
export function setupCalls(fd: number, s: SocketSetup): Call[] {
  const calls: Call[] = [{ call: 'socket', family: s.family, proto: s.proto, uid: s.uid ?? 0 }];
  const opt = (o: SockOpt) => calls.push({ call: 'setsockopt', fd, opt: o });
  if (s.reuseaddr) opt({ reuseaddr: true });
  if (s.reuseport) opt({ reuseport: true });
  if (s.v6only) opt({ v6only: true });
  if (s.device) opt({ bindtodevice: s.device });
  if (s.incomingCpu !== null && s.incomingCpu !== undefined) opt({ incomingCpu: s.incomingCpu });
  calls.push({ call: 'bind', fd, addr: s.addr, port: s.port });
  if (s.proto === 'tcp' && s.listen !== false) calls.push({ call: 'listen', fd });
  return calls;
}

/** A call log of these calls under `keys`, with no sk_lookup program, no ephemeral range and tcp_migrate_req off. */
export function callLog(calls: Call[], keys: Keys = { v4: 0, v6Outer: 0, v6Inner: 0 }): CallLog {
  return { calls, skLookup: null, keys, ephemeral: null, tcpMigrateReq: false };
}
