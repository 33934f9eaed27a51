/**
 * The program editor's scene (src/scene/editor-view.ts) and the model's
 * readers it relies on, without a browser: the calls written for the model,
 * the QUIC flows the generator draws, the line a refusal points at, and the
 * rows of routed datagrams. Where a destination is asserted, the expectation
 * is counted by hand from the program's text (payload word mod 4; the
 * connection ID's first byte), not taken from the code under test.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { cidProgram, lineOf, parseDatagrams, quicPacket, readProgram } from '../../src/model/editor';
import { Host, loadLookupSync } from '../../src/model/lookup';
import { datagramLine, editorCalls, editorLog, perSocket, quicFlows, refusalLine, routeRow, type EditorGroup } from '../../src/scene/editor-view';

const wasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));
beforeAll(() => loadLookupSync(readFileSync(wasm)));

const GROUP: EditorGroup = { proto: 'udp', sockets: 4, reuseport: true, bind: '0.0.0.0', port: 443 };

/** Routes `text`'s datagram lines through the group with `program`; returns each line's socket. */
function route(programText: string, packets: string, g: EditorGroup = GROUP): (number | null)[] {
  const read = readProgram(programText);
  const host = new Host('6.18', editorLog(g, read.program, 0x5eed0001));
  try {
    return parseDatagrams(packets, 100).map((p) => {
      if (p.error !== undefined) throw new Error(p.error);
      return routeRow(p.line, host.lookup({ proto: g.proto, tuple: p.datagram.tuple, device: null, ctx: p.datagram.ctx })).socket;
    });
  } finally {
    host.dispose();
  }
}

describe('the group as calls', () => {
  it('each socket is made, set SO_REUSEPORT and bound in order, and the program is attached last from socket 0', () => {
    const calls = editorCalls({ ...GROUP, sockets: 2 }, { kind: 'cpu' });
    expect(calls.map((c) => c.call)).toEqual(['socket', 'setsockopt', 'bind', 'socket', 'setsockopt', 'bind', 'setsockopt']);
    expect(calls.at(-1)).toEqual({ call: 'setsockopt', fd: 0, opt: { attachReuseport: { kind: 'cpu' } } });
  });

  it('without SO_REUSEPORT no socket sets it, and TCP sockets listen', () => {
    const calls = editorCalls({ ...GROUP, proto: 'tcp', sockets: 2, reuseport: false }, null);
    expect(calls.map((c) => c.call)).toEqual(['socket', 'bind', 'listen', 'socket', 'bind', 'listen']);
  });
});

describe('the program as read, and where a refusal points', () => {
  it('bpf_asm, tcpdump -dd and JSON give the same instructions', () => {
    const asm = readProgram('ld [0]\nmod #4\nret a\n');
    const dd = readProgram('{ 0x20, 0, 0, 0x00000000 },\n{ 0x94, 0, 0, 0x00000004 },\n{ 0x16, 0, 0, 0x00000000 },\n');
    const json = readProgram('[[32, 0, 0, 0],\n [148, 0, 0, 4],\n [22, 0, 0, 0]]');
    expect(dd.program).toEqual(asm.program);
    expect(json.program).toEqual(asm.program);
    expect(asm.lines).toEqual([1, 2, 3]);
    expect(json.lines).toEqual([1, 2, 3]);
    expect([asm.form, json.form]).toEqual(['text', 'json']);
  });

  it('a bad line is named, in every form', () => {
    expect(() => readProgram('ld [0]\nfrob #1\nret a')).toThrow(/^line 2:/);
    expect(() => readProgram('[[32, 0, 0, 0],\n [6, 0, 0]]')).toThrow(/^line 2:/);
    expect(() => readProgram('{ 0x20, 0, 0, 0 },\n{ 0x16, 0, 0 },')).toThrow(/^line 2:/);
    expect(lineOf('line 12: `x` is not a 32-bit number')).toBe(12);
  });

  it("the kernel's refusal of a division by the constant 0 points at the line that has it", () => {
    const read = readProgram('; divide\nld [0]\n\ndiv #0\nret a');
    const host = new Host('6.18', editorLog(GROUP, read.program, 1));
    try {
      const refusal = host.answers().at(-1);
      expect(refusal?.errno).toBe('EINVAL');
      expect(refusalLine(refusal!, read.lines)).toBe(4);
    } finally {
      host.dispose();
    }
  });

  it('without SO_REUSEPORT the attach is refused too', () => {
    const read = readProgram('ret #0');
    const host = new Host('6.18', editorLog({ ...GROUP, reuseport: false }, read.program, 1));
    try {
      expect(host.answers().at(-1)?.errno).toBe('EINVAL');
    } finally {
      host.dispose();
    }
  });
});

describe('datagrams routed', () => {
  it('the payload word mod 4 sends datagram k to socket k mod 4', () => {
    const lines = Array.from({ length: 8 }, (_, k) => `192.0.2.1:${40000 + k} 127.0.0.1:443 payload=0000000${k}`).join('\n');
    expect(route('ld [0]\nmod #4\nret a', lines)).toEqual([0, 1, 2, 3, 0, 1, 2, 3]);
  });

  it('a bad datagram line gives its error and number, the others are read', () => {
    const parsed = parseDatagrams('192.0.2.1:1 127.0.0.1:443\n# note\n192.0.2.1:2 127.0.0.1:443 payload=abc\n', 10);
    expect(parsed.map((p) => p.line)).toEqual([1, 3]);
    expect(parsed[1]!.error).toMatch(/odd number of hex digits/);
  });

  it('counts per socket include the sockets that got nothing', () => {
    const rows = [0, 0, 2].map((s, i) => ({ line: i + 1, from: '', payload: '', payloadLength: 0, socket: s, returned: null, outcome: null }));
    expect(perSocket([...rows, { ...rows[0]!, socket: null }], 4)).toEqual({ counts: [2, 0, 1, 0], dropped: 1 });
  });
});

describe('QUIC flows from the generator', () => {
  const base = { flows: 6, saddr: '192.0.2.10', sport: 40000, daddr: '127.0.0.1', dport: 443, cidLength: 20, cidNamesSocket: true, sockets: 4, seed: 7 };

  it('server-issued IDs name socket i mod N in their first byte; Initial IDs are the client’s own', () => {
    const short = quicFlows({ ...base, form: 'short' });
    expect(short.map((f) => f.spec.dcid[0])).toEqual([0, 1, 2, 3, 0, 1]);
    expect(short.map((f) => f.sport)).toEqual([40000, 40001, 40002, 40003, 40004, 40005]);
    expect(short.every((f) => f.spec.dcid.length === 20)).toBe(true);
    const initial = quicFlows({ ...base, form: 'initial' });
    expect(initial.map((f) => f.spec.dcid[0])).not.toEqual([0, 1, 2, 3, 0, 1]);
    expect(quicFlows({ ...base, form: 'short' })).toEqual(short);
  });

  it('with the connection-ID program, 1-RTT and Handshake flow i reaches socket i mod 4', () => {
    for (const form of ['short', 'handshake'] as const) {
      const lines = quicFlows({ ...base, form, flows: 8 }).map((f) => datagramLine(f, quicPacket(f.spec)));
      expect(route(cidProgram(), lines.join('\n')), form).toEqual([0, 1, 2, 3, 0, 1, 2, 3]);
    }
  });

  it('Initial packets and IDs shorter than 8 bytes are left to the hash, which the ID does not move', () => {
    // The program returns an index past the group for these: the hash of the 4-tuple decides, so the same
    // tuples with the ID's first byte changed go where they went before.
    for (const [form, cidLength] of [
      ['initial', 20],
      ['handshake', 7],
    ] as const) {
      const flows = quicFlows({ ...base, form, cidLength, flows: 8 });
      const a = flows.map((f) => datagramLine(f, quicPacket(f.spec)));
      const b = flows.map((f) => datagramLine(f, quicPacket({ ...f.spec, dcid: f.spec.dcid.map((x, i) => (i === 0 ? x ^ 1 : x)) })));
      expect(route(cidProgram(), b.join('\n'))).toEqual(route(cidProgram(), a.join('\n')));
    }
  });
});
