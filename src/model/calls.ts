/**
 * Call logs, the one shape of a layout: the calls a program makes on its
 * sockets, in order (`socket`, `setsockopt`, `bind`, `listen`, `connect`,
 * `shutdown`, `close`), which the model replays and answers call by call.
 * These helpers only write calls down and find a call in a log; every
 * answer is the model's (`Host.answers()`, one per call).
 */
import type { Call } from './generated/Call';
import type { CallLog } from './generated/CallLog';
import type { Family } from './generated/Family';
import type { Keys } from './generated/Keys';
import type { Proto } from './generated/Proto';
import type { SockOpt } from './generated/SockOpt';

export type { Call, CallLog, SockOpt };

/** The name of a call (`"socket"`, `"bind"`, …). */
export type CallName = Call['call'];

/**
 * What a socket does after `bind()`: `listen` (TCP calls listen(); a UDP
 * socket receives from its bind on and makes no further call), `bound`
 * (no further call), or `time_wait` (TCP: connect() to a loopback peer,
 * SO_LINGER on, then close(), which waits for the peer's ACK of its FIN and
 * leaves a TIME_WAIT socket on the port; without SO_LINGER the calls right
 * after close() would meet the socket still in FIN_WAIT1, see the model's
 * `Call::Close`).
 */
export type AfterBind = 'listen' | 'bound' | 'time_wait';

/**
 * One socket as a program sets it up: made, options set, bound, and then
 * what {@link AfterBind} says. The defaults below are the one place a
 * socket's unset options are written down; {@link setupCalls} applies them.
 */
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
  /** What it does after bind(). @default "listen" */
  afterBind?: AfterBind;
}

/** The peer a `time_wait` socket connects to before it closes: the discard port on loopback. */
const TIME_WAIT_PEER = { inet: '127.0.0.1', inet6: '::1', port: 9 } as const;

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
  const then = s.afterBind ?? 'listen';
  if (s.proto === 'tcp' && then === 'listen') calls.push({ call: 'listen', fd });
  if (s.proto === 'tcp' && then === 'time_wait') {
    calls.push(
      { call: 'connect', fd, addr: TIME_WAIT_PEER[s.family], port: TIME_WAIT_PEER.port },
      { call: 'setsockopt', fd, opt: { linger: 1 } },
      { call: 'close', fd },
    );
  }
  return calls;
}

/** The calls that set up each socket in turn, socket i being fd i. */
export function setupAll(sockets: readonly SocketSetup[]): Call[] {
  return sockets.flatMap((s, fd) => setupCalls(fd, s));
}

/** A call log of these calls under `keys`, with no sk_lookup program, no ephemeral range, tcp_migrate_req off and no device but `lo`. */
export function callLog(calls: Call[], keys: Keys = { v4: 0, v6Outer: 0, v6Inner: 0 }): CallLog {
  return { calls, skLookup: null, keys, ephemeral: null, tcpMigrateReq: false, devices: [] };
}

/** The socket each call acts on, by index: for a `socket` call, the fd it makes (how many `socket` calls came before it). */
export function fdOfCalls(calls: readonly Call[]): number[] {
  let made = 0;
  return calls.map((c) => (c.call === 'socket' ? made++ : c.fd));
}

/** How many sockets the log makes. */
export function socketCount(calls: readonly Call[]): number {
  return calls.filter((c) => c.call === 'socket').length;
}

/** The index in `calls` of the last `name` call on socket `fd` (its `socket` call for `"socket"`), or -1. */
export function lastCall(calls: readonly Call[], fd: number, name: CallName): number {
  const fds = fdOfCalls(calls);
  for (let i = calls.length - 1; i >= 0; i--) if (calls[i]!.call === name && fds[i] === fd) return i;
  return -1;
}

/**
 * Where a new call on socket `fd` goes, as a program would write it: a
 * `setsockopt` before the socket's first `bind` (options are set before
 * binding; one set later can still be moved there), any other call at the end.
 */
export function placeFor(calls: readonly Call[], fd: number, name: CallName): number {
  if (name !== 'setsockopt') return calls.length;
  const fds = fdOfCalls(calls);
  const bind = calls.findIndex((c, i) => c.call === 'bind' && fds[i] === fd);
  return bind === -1 ? calls.length : bind;
}

/** The calls without socket `fd`'s, the sockets after it numbered one lower (so the log stays a program). */
export function withoutSocket(calls: readonly Call[], fd: number): Call[] {
  const fds = fdOfCalls(calls);
  return calls.flatMap((c, i) => {
    if (fds[i] === fd) return [];
    if (c.call === 'socket' || c.fd < fd) return [c];
    return [{ ...c, fd: c.fd - 1 }];
  });
}
