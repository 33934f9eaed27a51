/**
 * The bind checker's reading of a given layout (src/islands/bind-log.ts):
 * what it shows, and what gives way to the default with a reason. The
 * entries and counts here are written by hand; the model answers nothing
 * that is asserted, it only reads or refuses the log.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT, MAX_CALLS, MAX_SOCKETS, readLog, type LogWords } from '../../src/islands/bind-log';
import { Host, loadLookupSync, type CallLog } from '../../src/model/lookup';

const wasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));

const words: LogWords = {
  notCalls: 'NOT CALLS',
  tooManyCalls: (n) => `CALLS ${n}`,
  tooManySockets: (n) => `SOCKETS ${n}`,
};

const socket = { call: 'socket', family: 'inet', proto: 'tcp', uid: 0 } as const;

describe('the bind checker reads a given layout', () => {
  beforeAll(() => loadLookupSync(readFileSync(wasm)));

  it('shows a call log the model replays as it is', () => {
    const given = { calls: [socket, { call: 'bind', fd: 0, addr: '127.0.0.1', port: 80 }] } as CallLog;
    const r = readLog('6.18', given, words);
    expect(r.error).toBeUndefined();
    expect(r.log.calls).toEqual(given.calls);
  });

  it('keeps a log the model refuses to replay, when every entry is a call it can draw', () => {
    // connect() on a socket that never bound: the model cannot choose a source address.
    const calls = [socket, { call: 'connect', fd: 0, addr: '127.0.0.1', port: 9 }];
    expect(() => new Host('6.18', { calls } as CallLog), 'the model refuses it').toThrow(/connect on socket 0/);
    const r = readLog('6.18', { calls } as CallLog, words);
    expect(r.error).toBeUndefined();
    expect(r.log.calls).toEqual(calls);
  });

  it('gives way to the default, with a reason, for entries that are not calls (they crashed the drawing)', () => {
    for (const bad of [null, 5, 'bind', { call: 'setsockopt', fd: 0 }, { call: 'bind', fd: 'x', addr: '::', port: 1 }, { call: 'fork', fd: 0 }]) {
      const r = readLog('6.18', { calls: [socket, bad] } as unknown as CallLog, words);
      expect(r.log, JSON.stringify(bad)).toEqual(DEFAULT);
      expect(r.error, JSON.stringify(bad)).toMatch(/^NOT CALLS; ./);
    }
  });

  it('holds both bounds whether or not the model replays the log', () => {
    const sockets = Array.from({ length: MAX_SOCKETS + 1 }, () => socket);
    expect(readLog('6.18', { calls: sockets } as CallLog, words)).toEqual({ log: DEFAULT, error: `SOCKETS ${MAX_SOCKETS + 1}` });
    // The same sockets after a call the model refuses to replay: they were shown, all 33.
    const refused = [socket, { call: 'connect', fd: 0, addr: '127.0.0.1', port: 9 }, ...sockets];
    expect(() => new Host('6.18', { calls: refused } as CallLog), 'the model refuses it').toThrow();
    expect(readLog('6.18', { calls: refused } as CallLog, words)).toEqual({ log: DEFAULT, error: `SOCKETS ${MAX_SOCKETS + 2}` });
    const calls = [socket, ...Array.from({ length: MAX_CALLS }, () => ({ call: 'listen', fd: 0 }))];
    expect(readLog('6.18', { calls } as CallLog, words)).toEqual({ log: DEFAULT, error: `CALLS ${MAX_CALLS + 1}` });
  });

  it('gives way to the default with the model reason for what is no layout at all', () => {
    const r = readLog('6.18', { sockets: 'none' } as never, words);
    expect(r.log).toEqual(DEFAULT);
    expect(r.error).toBeTruthy();
  });
});
