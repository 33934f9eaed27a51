import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { callLog, Host, loadLookupSync, setupCalls, type SocketSetup } from '../../src/model/lookup';
import { say, sayRefusal } from '../../src/model/messages';

const wasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));

function sock(family: 'inet' | 'inet6', addr: string): SocketSetup {
  return { family, proto: 'tcp', addr, port: 8888, reuseport: true };
}

/** Each socket set up in turn: socket i is fd i. */
const logOf = (sockets: SocketSetup[], v4 = 0) =>
  callLog(
    sockets.flatMap((s, fd) => setupCalls(fd, s)),
    { v4, v6Outer: 0, v6Inner: 0 },
  );

describe('full listener lookup over wasm', () => {
  beforeAll(() => loadLookupSync(readFileSync(wasm)));

  it('reuseport_addr_any: the specific socket wins on 6.18, not on 4.17', () => {
    const sockets = [sock('inet', '0.0.0.0'), sock('inet', '0.0.0.0'), sock('inet6', '::'), sock('inet', '127.0.0.1'), sock('inet', '0.0.0.0')];
    const layout = logOf(sockets, 7);
    const packet = {
      proto: 'tcp' as const,
      tuple: { saddr: '127.0.0.1', sport: 40000, daddr: '127.0.0.1', dport: 8888 },
      device: null,
      ctx: { cpu: 0, payload: null },
    };
    const now = new Host('6.18', layout).lookup(packet);
    expect(now.socket).toBe(3);
    expect(now.tables[0]!.table).toEqual({ kind: 'lhash2', addr: '127.0.0.1', port: 8888 });
    expect(say('en', 'table_name', now.tables[0]!.table)).toBe('lhash2 (127.0.0.1, 8888)');
    const old = new Host('4.17', layout).lookup(packet);
    expect(old.socket).not.toBe(3);
    expect(old.group?.members).toContain(old.socket);
  });

  it('names the socket whose bind fails and the rule', () => {
    const a = { ...sock('inet', '127.0.0.1'), reuseport: false };
    const layout = logOf([a, a]);
    const r = new Host('6.18', layout).results();
    expect(r[1]!.bind?.errno).toBe('EADDRINUSE');
    expect(r[1]!.bind?.with).toBe(0);
    expect(r[1]!.bind?.rule.kind).toBe('no_shared_option');
    expect(r[1]!.bind?.source.func).toBe('inet_bind_conflict');
    expect(sayRefusal('en', r[1]!.bind!)).toMatch(/do not both set SO_REUSEPORT.*inet_bind_conflict, net\/ipv4\/inet_connection_sock\.c, kernel 6\.18/);
    expect(sayRefusal('zh-CN', r[1]!.bind!)).toMatch(/地址重叠.*inet_bind_conflict/);
  });

  it('answers each call in order, and reads the earlier sockets form too', () => {
    // socket, bind, listen for fd 0; socket, bind (refused: fd 0 listens on the port) for fd 1.
    const a = { ...sock('inet', '127.0.0.1'), reuseport: false };
    const host = new Host('6.18', logOf([a, { ...a, afterBind: 'bound' as const }]));
    expect(host.answers().map((x) => x?.errno ?? 'ok')).toEqual(['ok', 'ok', 'ok', 'ok', 'EADDRINUSE']);
    const old = { family: 'inet' as const, proto: 'tcp' as const, addr: '127.0.0.1', port: 8888 };
    const earlierHost = new Host('6.18', { sockets: [old, old] } as never);
    const earlier = earlierHost.results();
    expect(earlier[1]!.bind?.errno).toBe('EADDRINUSE');
    expect(earlier[0]!.addr).toBe('127.0.0.1');
  });

  it('gives back the earlier sockets form as the calls the model converted it to', () => {
    // README: each earlier-form socket becomes socket, its options, bind and at once listen (TCP);
    // with listenOrder the listens come after every bind, in that order.
    const old = { family: 'inet' as const, proto: 'tcp' as const, addr: '127.0.0.1', port: 8888, reuseaddr: true };
    const host = new Host('6.18', { sockets: [old, { ...old, addr: '0.0.0.0' }], listenOrder: [1, 0] } as never);
    expect(host.calls().calls).toEqual([
      { call: 'socket', family: 'inet', proto: 'tcp', uid: 0 },
      { call: 'setsockopt', fd: 0, opt: { reuseaddr: true } },
      { call: 'bind', fd: 0, addr: '127.0.0.1', port: 8888 },
      { call: 'socket', family: 'inet', proto: 'tcp', uid: 0 },
      { call: 'setsockopt', fd: 1, opt: { reuseaddr: true } },
      { call: 'bind', fd: 1, addr: '0.0.0.0', port: 8888 },
      { call: 'listen', fd: 1 },
      { call: 'listen', fd: 0 },
    ]);
    // A call log given as one comes back as it was.
    const log = logOf([sock('inet', '127.0.0.1')]);
    expect(new Host('6.18', log).calls().calls).toEqual(log.calls);
  });
});
