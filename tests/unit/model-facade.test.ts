import { beforeAll, describe, expect, it } from 'vitest';
import {
  ephemeralRange,
  Group,
  maxGroupMembers,
  maxListeners,
  NO_LISTENER,
  V4Batch,
  groupSpec,
  parseBind,
  parseCbpf,
  parseTuples,
  profiles,
  resolveProfile,
  version,
  type Explain,
} from '../../src/model/index';
import { sayLineError } from '../../src/model/messages';
import { loadModelForTests } from './setup-model';

// kernel-history.md §1.5: 127.0.0.9:40000 -> 127.0.0.1:8080, secret 0x12345678 + mix 0x9abcdef0.
const REF_KEYS = { v4: (0x12345678 + 0x9abcdef0) >>> 0, v6Outer: 0, v6Inner: 0 };
const REF_TUPLE = { saddr: '127.0.0.9', sport: 40000, daddr: '127.0.0.1', dport: 8080 };

function refGroup(kernel: string): Group {
  return new Group(kernel, { proto: 'tcp', listeners: 8, bind: '127.0.0.1', port: 8080, keys: REF_KEYS });
}

describe('model facade over wasm', () => {
  beforeAll(loadModelForTests);

  it('reports a semver version', () => {
    expect(version()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('gives the reference answers before and after 6.15', () => {
    const before = refGroup('6.12').explain(REF_TUPLE);
    expect([before.hash.hashHex, before.listener, before.slot]).toEqual(['8c07df78', 4, 4]);
    const after = refGroup('6.18').explain(REF_TUPLE);
    expect([after.hash.hashHex, after.listener, after.slot]).toEqual(['c3b545b8', 6, 6]);
    expect(after.hash.lportAdded).toBe(8080);
  });

  it('explains pasted text line by line and names the bad line and field', () => {
    const answers = refGroup('6.18').explainText('127.0.0.9 40000 127.0.0.1 8080\n127.0.0.9 99999 127.0.0.1 8080\n\n# note\n127.0.0.9:40000 127.0.0.1:8080\n');
    expect(answers.map((a) => a.line)).toEqual([1, 2, 5]);
    expect(answers[0]!.explain!.listener).toBe(6);
    // The model's structured line error, said in English by the sentence tables.
    expect(sayLineError('en', answers[1]!.error!)).toMatch(/source port `99999`/);
    expect(answers[2]!.explain!.listener).toBe(6);
  });

  it('refuses a packet for another port with the kernel consequence', () => {
    expect(() => refGroup('6.18').explain({ ...REF_TUPLE, dport: 9 })).toThrow(/RST/);
  });

  it('refuses the 32769th member with the kernel error', () => {
    expect(() => new Group('6.18', { proto: 'tcp', listeners: 32769, bind: '127.0.0.1', port: 80 })).toThrow(/ENOMEM/);
    expect(() => new Group('6.18', { proto: 'udp', listeners: 32769, bind: '127.0.0.1', port: 80 })).toThrow(/EADDRINUSE/);
  });

  it('gives the kernel constants the site bounds its inputs with', () => {
    // socks[] doubles from 128 while 2 * max_socks <= U16_MAX (net/core/sock_reuseport.c): 2^15.
    expect(maxGroupMembers()).toBe(2 ** 15);
    // The default fs.nr_open (fs/file.c: 1024 * 1024).
    expect(maxListeners()).toBe(1024 * 1024);
    // ip_local_port_range's default: 32768-61000 until 4.5, 32768-60999 from 4.6 (07f4c90062f8).
    expect(ephemeralRange('4.5')).toEqual({ low: 32768, high: 61000 });
    expect(ephemeralRange('4.6')).toEqual({ low: 32768, high: 60999 });
    expect(ephemeralRange('6.18')).toEqual({ low: 32768, high: 60999 });
  });

  it('lists the profiles and resolves releases to the newest profile not newer', () => {
    const names = profiles().map((p) => `${p.release.major}.${p.release.minor}`);
    for (const n of ['3.9', '4.4', '4.6', '4.17', '5.4', '5.10', '5.15', '6.1', '6.6', '6.12', '6.18', '7.2']) expect(names).toContain(n);
    expect(resolveProfile('5.19.3').release).toEqual({ major: 5, minor: 15 });
    expect(() => resolveProfile('2.6')).toThrow(/3\.9/);
  });

  it('parses tuples and bind addresses with the model parser', () => {
    expect(parseTuples('[fd02::5]:40000 [::1]:8080')[0]!.tuple).toEqual({ saddr: 'fd02::5', sport: 40000, daddr: '::1', dport: 8080 });
    expect(parseBind('[::1]:8080')).toEqual({ addr: '::1', port: 8080 });
    expect(parseBind('0.0.0.0')).toEqual({ addr: '0.0.0.0', port: null });
    expect(() => parseBind('nope')).toThrow(/bind address/);
  });

  it('fills optional group fields with no options set', () => {
    const s = groupSpec({ proto: 'udp', listeners: 2, bind: '::', port: 53 });
    expect(s.closed).toEqual([]);
    expect(s.v6only).toBe(false);
  });

  it('closing a member moves the last into its slot', () => {
    const g = new Group('6.18', { proto: 'tcp', listeners: 4, bind: '127.0.0.1', port: 8080 });
    expect(g.close(1)).toEqual({ kind: 'left', listener: 1, slot: 1, moved: 3 });
    expect([...g.listening()]).toEqual([0, 3, 2]);
    expect(g.socks().length).toBe(128);
    g.dispose();
  });

  it('batch selection agrees with explain packet by packet', () => {
    const g = new Group('6.18', { proto: 'tcp', listeners: 300, bind: '0.0.0.0', port: 8080, keys: REF_KEYS, closed: [0, 17, 299] });
    expect(g.batchIsVectorised()).toBe(true);
    const n = 3000;
    const b = new V4Batch(n);
    const v = b.views();
    for (let i = 0; i < n; i++) {
      v.saddr[i] = (0x7f000000 | ((i * 2654435761) & 0xfffffe) | 1) >>> 0;
      v.sport[i] = 32768 + (i % 20000);
      v.daddr[i] = 0x7f000001 + (i % 3);
      v.dport[i] = i % 500 === 0 ? 9 : 8080;
    }
    g.selectBatchV4(b, n);
    for (let i = 0; i < n; i++) {
      const a = v.saddr[i]!;
      const t = {
        saddr: [a >>> 24, (a >>> 16) & 255, (a >>> 8) & 255, a & 255].join('.'),
        sport: v.sport[i]!,
        daddr: `127.0.0.${1 + (i % 3)}`,
        dport: v.dport[i]!,
      };
      let want: number;
      try {
        want = (g.explain(t) as Explain).listener ?? NO_LISTENER;
      } catch {
        want = NO_LISTENER;
      }
      expect(v.out[i], `packet ${i}`).toBe(want);
    }
    b.dispose();
    g.dispose();
  });
});

describe('payload programs through the facade', () => {
  beforeAll(loadModelForTests);

  it('reuseport_bpf: datagram k lands on listener k mod 4', () => {
    const g = new Group('6.18', { proto: 'udp', listeners: 8, bind: '0.0.0.0', port: 8888, program: { kind: 'payload_mod', modulus: 4 } });
    for (let k = 0; k < 16; k++) {
      const e = g.explain({ saddr: '127.0.0.1', sport: 30000 + k, daddr: '127.0.0.1', dport: 8888 }, 0, k);
      expect(e.listener).toBe(k % 4);
      expect(e.pick.kind).toBe('program');
    }
    g.dispose();
  });
});

describe('classic BPF text (the model parses)', () => {
  beforeAll(loadModelForTests);

  it('reads bpf_asm text and the tcpdump -dd array into the same program', () => {
    const asm = parseCbpf('ld [0]\nmod #4\nret a\n');
    const dd = parseCbpf('{ 0x20, 0, 0, 0x00000000 },\n{ 0x94, 0, 0, 0x00000004 },\n{ 0x16, 0, 0, 0x00000000 },\n');
    expect(asm).toEqual({
      kind: 'cbpf',
      insns: [
        [0x20, 0, 0, 0],
        [0x94, 0, 0, 4],
        [0x16, 0, 0, 0],
      ],
    });
    expect(dd).toEqual(asm);
  });

  it('names the line of a bad instruction', () => {
    expect(() => parseCbpf('ld [0]\nfrob #1\nret a')).toThrow(/line 2/);
  });
});
