/**
 * The call-log helpers of src/model/calls.ts: they write calls down and find
 * calls in a log, and never answer one (the model does). Expected logs are
 * written out here by hand from the README's description of a call log.
 */
import { describe, expect, it } from 'vitest';
import { fdOfCalls, lastCall, placeFor, setupCalls, socketCount, withoutSocket, type Call } from '../../src/model/calls';

const log: Call[] = [
  { call: 'socket', family: 'inet', proto: 'tcp', uid: 0 },
  { call: 'socket', family: 'inet', proto: 'tcp', uid: 0 },
  { call: 'bind', fd: 1, addr: '0.0.0.0', port: 80 },
  { call: 'bind', fd: 0, addr: '127.0.0.1', port: 80 },
  { call: 'socket', family: 'inet6', proto: 'udp', uid: 1000 },
  { call: 'listen', fd: 1 },
  { call: 'bind', fd: 2, addr: '::', port: 80 },
  { call: 'listen', fd: 0 },
  { call: 'bind', fd: 0, addr: '127.0.0.1', port: 81 },
];

describe('call logs', () => {
  it('numbers sockets by their socket() calls, and finds the last call of a kind on a socket', () => {
    expect(fdOfCalls(log)).toEqual([0, 1, 1, 0, 2, 1, 2, 0, 0]);
    expect(socketCount(log)).toBe(3);
    expect(lastCall(log, 0, 'bind')).toBe(8);
    expect(lastCall(log, 1, 'listen')).toBe(5);
    expect(lastCall(log, 2, 'socket')).toBe(4);
    expect(lastCall(log, 2, 'listen')).toBe(-1);
  });

  it("a new setsockopt goes before the socket's first bind, any other call at the end", () => {
    // Socket 0 first binds at index 3, socket 1 at 2; socket 2 binds at 6.
    expect(placeFor(log, 0, 'setsockopt')).toBe(3);
    expect(placeFor(log, 1, 'setsockopt')).toBe(2);
    expect(placeFor(log, 2, 'setsockopt')).toBe(6);
    expect(placeFor(log, 0, 'listen')).toBe(9);
    expect(placeFor(log, 1, 'close')).toBe(9);
    // A socket that has not bound yet: at the end, after its socket() call.
    expect(placeFor(log.slice(0, 5), 2, 'setsockopt')).toBe(5);
  });

  it('removing a socket drops its calls and numbers the later sockets one lower', () => {
    expect(withoutSocket(log, 1)).toEqual([
      { call: 'socket', family: 'inet', proto: 'tcp', uid: 0 },
      { call: 'bind', fd: 0, addr: '127.0.0.1', port: 80 },
      { call: 'socket', family: 'inet6', proto: 'udp', uid: 1000 },
      { call: 'bind', fd: 1, addr: '::', port: 80 },
      { call: 'listen', fd: 0 },
      { call: 'bind', fd: 0, addr: '127.0.0.1', port: 81 },
    ]);
  });

  it('a TCP socket left in TIME_WAIT connects to a loopback peer, sets SO_LINGER (so close() waits for the ACK) and closes; a UDP socket never listens', () => {
    expect(setupCalls(3, { family: 'inet6', proto: 'tcp', addr: '::1', port: 80, reuseaddr: true, afterBind: 'time_wait' })).toEqual([
      { call: 'socket', family: 'inet6', proto: 'tcp', uid: 0 },
      { call: 'setsockopt', fd: 3, opt: { reuseaddr: true } },
      { call: 'bind', fd: 3, addr: '::1', port: 80 },
      { call: 'connect', fd: 3, addr: '::1', port: 9 },
      { call: 'setsockopt', fd: 3, opt: { linger: 1 } },
      { call: 'close', fd: 3 },
    ]);
    expect(setupCalls(0, { family: 'inet', proto: 'udp', addr: '0.0.0.0', port: 53 }).map((c) => c.call)).toEqual(['socket', 'bind']);
    expect(setupCalls(0, { family: 'inet', proto: 'tcp', addr: '0.0.0.0', port: 53, afterBind: 'bound' }).map((c) => c.call)).toEqual(['socket', 'bind']);
  });
});
