import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { Host, loadLookupSync, type SocketSpec } from '../../src/model/lookup';
import { say, sayRefusal } from '../../src/model/messages';

const wasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));

function sock(family: 'inet' | 'inet6', addr: string): SocketSpec {
  return {
    family,
    proto: 'tcp',
    addr,
    port: 8888,
    v6only: false,
    reuseaddr: false,
    reuseport: true,
    uid: 0,
    device: null,
    state: 'listen',
    peer: null,
    incomingCpu: null,
    program: null,
    programBeforeBind: false,
  };
}

describe('full listener lookup over wasm', () => {
  beforeAll(() => loadLookupSync(readFileSync(wasm)));

  it('reuseport_addr_any: the specific socket wins on 6.18, not on 4.17', () => {
    const sockets = [sock('inet', '0.0.0.0'), sock('inet', '0.0.0.0'), sock('inet6', '::'), sock('inet', '127.0.0.1'), sock('inet', '0.0.0.0')];
    const layout = { sockets, listenOrder: null, skLookup: null, keys: { v4: 7, v6Outer: 0, v6Inner: 0 }, ephemeral: null, closed: [] };
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
    const layout = { sockets: [a, a], listenOrder: null, skLookup: null, keys: { v4: 0, v6Outer: 0, v6Inner: 0 }, ephemeral: null, closed: [] };
    const r = new Host('6.18', layout).results();
    expect(r[1]!.bind?.errno).toBe('EADDRINUSE');
    expect(r[1]!.bind?.with).toBe(0);
    expect(r[1]!.bind?.rule.kind).toBe('no_shared_option');
    expect(r[1]!.bind?.source.func).toBe('inet_bind_conflict');
    expect(sayRefusal('en', r[1]!.bind!)).toMatch(/do not both set SO_REUSEPORT.*inet_bind_conflict, net\/ipv4\/inet_connection_sock\.c, kernel 6\.18/);
    expect(sayRefusal('zh-CN', r[1]!.bind!)).toMatch(/地址重叠.*inet_bind_conflict/);
  });
});
