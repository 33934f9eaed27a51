/**
 * The program editor's eBPF part without a browser: the map form's text
 * (tests/unit expectations written by hand), the example object in
 * public/examples (it reads, and it is what a fresh compile of nginx's
 * source gives), and datagrams routed through nginx's QUIC helper with the
 * maps as the form fills them. Where a destination is asserted, it is
 * counted from the helper's source (tests/fixtures/ebpf/
 * ngx_quic_reuseport_helper.c): the first 8 bytes of a short header's
 * Destination Connection ID, read most significant first, are the SOCKHASH
 * key; a key in the map selects its socket (`bpf_sk_select_reuseport`
 * returns 0, SK_PASS); a key not in it returns -ENOENT, and SK_PASS with
 * nothing selected leaves the datagram to the hash.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ebpfCheckMaps, ebpfDefaultMaps, ebpfMapBounds, ebpfMapTypes, readEbpf, type EbpfObject, type EbpfProgram, type Holds } from '../../src/model/ebpf';
import { parseDatagrams, quicPacket } from '../../src/model/editor';
import type { Explain } from '../../src/model/generated/Explain';
import type { Program } from '../../src/model/generated/Program';
import { Group } from '../../src/model/index';
import { loadLookupSync } from '../../src/model/lookup';
import { formMaps, keyBytesBE, mapForms, readFill, socketKeys } from '../../src/scene/ebpf-form';
import { ebpfRunView, mapsAfterTables } from '../../src/scene/ebpf-run-view';
import { datagramLine, quicFlows } from '../../src/scene/editor-view';
import { explainView } from '../../src/scene/explain-view';
import { sayElfError, sayMapRefusal, sayUi } from '../../src/model/messages';
import { loadModelForTests } from './setup-model';

const OBJECT = fileURLToPath(new URL('../../public/examples/ngx_quic_reuseport_helper.o', import.meta.url));
const lookupWasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));

let nginx: EbpfObject;
let holds: (t: number) => Holds;
beforeAll(() => {
  loadModelForTests();
  loadLookupSync(readFileSync(lookupWasm));
  nginx = readEbpf(new Uint8Array(readFileSync(OBJECT))).object!;
  const types = ebpfMapTypes();
  holds = (t) => types.find((x) => x.mapType === t)?.holds ?? 'bytes';
});

/** nginx's helper as nginx loads it: BPF_PROG_TYPE_SK_REUSEPORT (ngx_event_quic_bpf_code.c). */
const helper = (): EbpfProgram => ({ ...nginx.programs[0]!, kind: 'sk_reuseport' });

describe("a map's text", () => {
  it('reads KEY VALUE lines, skipping blanks and comments; a socket map takes listener numbers', () => {
    const r = readFill('m', '# sockets\n0 2\n\n0x10 3\nhex:0100000000000000 1\n', 'sockets');
    expect(r).toEqual({
      fill: {
        map: 'm',
        entries: [
          [0, { socket: 2 }],
          [16, { socket: 3 }],
          ['0100000000000000', { socket: 1 }],
        ],
      },
    });
    expect(readFill('m', '1 map:inner\n2 7', 'maps')).toEqual({
      fill: {
        map: 'm',
        entries: [
          [1, { map: 'inner' }],
          [2, 7],
        ],
      },
    });
  });

  it('names the line and the field that is wrong', () => {
    expect(readFill('m', '0 0\n1', 'sockets')).toEqual({ problem: { kind: 'fields', line: 2 } });
    expect(readFill('m', '0 0\n\nx 1', 'sockets')).toEqual({ problem: { kind: 'key', line: 3, text: 'x' } });
    expect(readFill('m', '0 zero', 'bytes')).toEqual({ problem: { kind: 'value', line: 1, text: 'zero' } });
    // 2^53 is past JavaScript's exact integers: refused, not rounded.
    expect(readFill('m', '9007199254740992 0', 'sockets')).toEqual({ problem: { kind: 'key', line: 1, text: '9007199254740992' } });
  });

  it('writes a key most significant byte first, as ngx_quic_parse_uint64 reads it back', () => {
    expect(keyBytesBE(0x0102, 8)).toEqual([0, 0, 0, 0, 0, 0, 1, 2]);
    expect(keyBytesBE(3, 4)).toEqual([0, 0, 0, 3]);
  });
});

describe("nginx's QUIC helper from public/examples", () => {
  it('reads: one program in section ngx_quic_reuseport_helper, its map declared and not defined', () => {
    expect(nginx.programs.map((p) => [p.name, p.section])).toEqual([['ngx_quic_select_socket_by_dcid', 'ngx_quic_reuseport_helper']]);
    expect(nginx.license).toBe('BSD');
    expect(nginx.programs[0]!.maps.map((m) => [m.name, m.mapType])).toEqual([['ngx_quic_sockmap', 0]]);
  });

  // The object checked in is what the source gives: a fresh compile (scripts/ebpf-fixtures.sh) has the same instructions.
  it.skipIf(!existsSync('/usr/bin/clang') && !existsSync('/usr/bin/clang-14'))('is what a fresh compile of the fixture source gives', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ebpf-ex-'));
    try {
      execFileSync('bash', ['scripts/ebpf-fixtures.sh', dir], { stdio: 'pipe' });
      const fresh = readEbpf(new Uint8Array(readFileSync(join(dir, 'ngx_quic_reuseport_helper.o')))).object!;
      expect(fresh.programs.map((p) => p.insns)).toEqual(nginx.programs.map((p) => p.insns));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the form starts the map as nginx makes it: a user-made SOCKHASH of 8-byte keys, socket i at key i', () => {
    const forms = mapForms(helper(), ebpfDefaultMaps(helper(), 4));
    expect(forms).toHaveLength(1);
    const f = forms[0]!;
    expect([f.name, f.userMade, f.def.keySize, f.def.valueSize]).toEqual(['ngx_quic_sockmap', true, 8, 8]);
    expect(holds(f.def.mapType)).toBe('sockets');
    expect(f.text).toBe('0 0\n1 1\n2 2\n3 3');
    expect(socketKeys(forms, holds)).toEqual([0, 1, 2, 3].map((k) => [0, 0, 0, 0, 0, 0, 0, k]));
  });

  it('a listener the group does not have is refused by the model, naming the map', () => {
    const forms = mapForms(helper(), ebpfDefaultMaps(helper(), 4));
    const maps = formMaps([{ ...forms[0]!, text: '0 0\n1 7' }], holds);
    if ('problem' in maps) throw new Error('the text reads');
    // Line 2 puts listener 7 at key 1; the group has 4.
    expect(ebpfCheckMaps(helper(), maps, 4)).toEqual({ kind: 'no_listener', map: 'ngx_quic_sockmap', key: '1', listener: 7, members: 4 });
  });

  it("the form's size bounds are the ones the model's check applies: at the bound accepted, one past it refused", () => {
    const b = ebpfMapBounds();
    const forms = mapForms(helper(), ebpfDefaultMaps(helper(), 4));
    const check = (def: Partial<EbpfProgram['maps'][number]>) => {
      // A hash of the sizes asked, holding nothing: only its definition is checked.
      const maps = formMaps([{ ...forms[0]!, def: { ...forms[0]!.def, mapType: 1, ...def }, text: '' }], holds);
      if ('problem' in maps) throw new Error('an empty text reads');
      return ebpfCheckMaps(helper(), maps, 4);
    };
    const refused = (kind: string) => ({ kind: 'def', map: 'ngx_quic_sockmap', why: expect.objectContaining({ kind }) });
    expect(check({ keySize: b.keySize })).toBeNull();
    expect(check({ keySize: b.keySize + 1 })).toEqual(refused('sizes_over'));
    expect(check({ valueSize: b.valueSize })).toBeNull();
    expect(check({ valueSize: b.valueSize + 1 })).toEqual(refused('sizes_over'));
    expect(check({ maxEntries: b.maxEntries })).toBeNull();
    expect(check({ maxEntries: b.maxEntries + 1 })).toEqual(refused('max_entries_over'));
    // A key a program builds on its stack: MAX_BPF_STACK, 512 bytes (include/linux/filter.h).
    expect(b.keySize).toBe(512);
  });
});

/** Routes generated flows through a 4-socket UDP group on 0.0.0.0:443 running `program`, the maps carried from datagram to datagram. */
function route(program: Program, lines: string[]): Explain[] {
  let maps = program.kind === 'ebpf' ? program.maps : [];
  return parseDatagrams(lines.join('\n'), 100).map((p) => {
    if (p.error !== undefined) throw new Error(p.error);
    const g = new Group('6.18', {
      proto: 'udp',
      listeners: 4,
      bind: '0.0.0.0',
      port: 443,
      keys: { v4: 0x5eed0001, v6Outer: 0x5eed0001, v6Inner: 0 },
      program: program.kind === 'ebpf' ? { ...program, maps } : program,
    });
    try {
      const e = g.explainCtx(p.datagram.tuple, p.datagram.ctx);
      maps = g.ebpfMapsAfter(p.datagram.tuple, p.datagram.ctx) ?? maps;
      return e;
    } finally {
      g.dispose();
    }
  });
}

describe('datagrams through the helper, the maps as the form fills them', () => {
  const program = (): Program => {
    const forms = mapForms(helper(), ebpfDefaultMaps(helper(), 4));
    const maps = formMaps(forms, holds);
    if ('problem' in maps) throw new Error('the default text reads');
    return { kind: 'ebpf', program: helper(), maps: maps.maps, extraMaps: maps.extraMaps, seed: 1 };
  };
  const base = { flows: 8, saddr: '192.0.2.10', sport: 40000, daddr: '127.0.0.1', dport: 443, cidLength: 20, cidNamesSocket: true, sockets: 4, seed: 7 };

  it("short-header flow i, whose ID opens with socket i mod 4's key, reaches socket i mod 4", () => {
    const keys = socketKeys(mapForms(helper(), ebpfDefaultMaps(helper(), 4)), holds)!;
    const lines = quicFlows({ ...base, form: 'short', cidKeys: keys }).map((f) => datagramLine(f, quicPacket(f.spec)));
    const out = route(program(), lines);
    expect(out.map((e) => e.listener)).toEqual([0, 1, 2, 3, 0, 1, 2, 3]);
    // The card shows the run: one bpf_sk_select_reuseport call that returned 0, and the exit with SK_PASS (1).
    const pick = out[1]!.pick;
    if (pick.kind !== 'program' || !pick.ebpfRun) throw new Error('the group ran the program');
    expect(pick.ebpfRun.calls.map((c) => [c.helper, c.result])).toEqual([['bpf_sk_select_reuseport', '0']]);
    expect(pick.ebpfRun.end).toEqual({ kind: 'returned', value: '1' });
    const view = ebpfRunView(pick.ebpfRun, 'en');
    expect(view.tables[0]!.rows.map((r) => r[1]!.split('(')[0])).toEqual(['bpf_sk_select_reuseport']);
    expect(view.tables[1]!.rows).toHaveLength(pick.ebpfRun.steps.length);
    const card = explainView(out[1]!, 'en');
    expect(card.sections.some((s) => s.tables.some((t) => t.caption === view.tables[0]!.caption))).toBe(true);
  });

  it('an ID whose key is in no entry is left to the hash: the helper called, got -ENOENT, and passed', () => {
    // Keys 100..103: the map holds 0..3 only.
    const lines = quicFlows({ ...base, flows: 4, form: 'short', cidKeys: [100, 101, 102, 103].map((k) => keyBytesBE(k, 8)) }).map((f) =>
      datagramLine(f, quicPacket(f.spec)),
    );
    for (const e of route(program(), lines)) {
      if (e.pick.kind !== 'program' || !e.pick.ebpfRun) throw new Error('the group ran the program');
      expect(e.pick.ebpfRun.calls.map((c) => [c.helper, c.result])).toEqual([['bpf_sk_select_reuseport', '-ENOENT']]);
      expect(e.pick.outcome).toEqual({ kind: 'pass_selected_nothing' });
    }
  });

  it('the maps after a run are the maps before it (the helper writes none), said as hex keys', () => {
    const keys = socketKeys(mapForms(helper(), ebpfDefaultMaps(helper(), 4)), holds)!;
    const [f] = quicFlows({ ...base, flows: 1, form: 'short', cidKeys: keys });
    const line = datagramLine(f!, quicPacket(f!.spec));
    const [d] = parseDatagrams(line, 1);
    const p = program();
    const g = new Group('6.18', { proto: 'udp', listeners: 4, bind: '0.0.0.0', port: 443, program: p });
    try {
      const after = g.ebpfMapsAfter(d!.datagram!.tuple, d!.datagram!.ctx)!;
      const t = mapsAfterTables(after, 'en');
      // Key 2 as a little-endian u64 in memory: 02 then seven zero bytes.
      expect(t[0]!.rows).toEqual([
        ['hex:0000000000000000', '0'],
        ['hex:0100000000000000', '1'],
        ['hex:0200000000000000', '2'],
        ['hex:0300000000000000', '3'],
      ]);
    } finally {
      g.dispose();
    }
  });
});

/** Two English words in a row: a sentence or a phrase, not a kernel identifier (`bpf_sk_select_reuseport`, `net/core/filter.c`). */
const ENGLISH = /\b[a-z]{2,} [a-z]{2,}\b/i;

describe("the run on the Chinese page: the model's facts, the catalogue's words", () => {
  const program = (): Program => {
    const maps = formMaps(mapForms(helper(), ebpfDefaultMaps(helper(), 4)), holds);
    if ('problem' in maps) throw new Error('the default text reads');
    return { kind: 'ebpf', program: helper(), maps: maps.maps, extraMaps: maps.extraMaps, seed: 1 };
  };
  const base = { flows: 2, saddr: '192.0.2.10', sport: 40000, daddr: '127.0.0.1', dport: 443, cidLength: 20, cidNamesSocket: true, sockets: 4, seed: 7 };
  /** The calls table and the end row of each datagram's run, in `lang`. */
  const said = (cidKeys: number[][], lang: 'en' | 'zh-CN') =>
    route(
      program(),
      quicFlows({ ...base, form: 'short', cidKeys }).map((f) => datagramLine(f, quicPacket(f.spec))),
    ).map((e) => {
      if (e.pick.kind !== 'program' || !e.pick.ebpfRun) throw new Error('the group ran the program');
      const view = ebpfRunView(e.pick.ebpfRun, lang);
      const ended = view.rows.find((r) => r.label === sayUi(lang, 'ebpf.ended'))!.value;
      return { calls: view.tables[0]!.rows.flat(), ended };
    });
  const inMap = () => socketKeys(mapForms(helper(), ebpfDefaultMaps(helper(), 4)), holds)!;
  const notInMap = () => [100, 101].map((k) => keyBytesBE(k, 8));

  it('a key in the map (a socket selected) and a key in none (-ENOENT) read in Chinese, numbers and kernel names as the model gave them', () => {
    for (const keys of [inMap(), notInMap()]) {
      for (const run of said(keys, 'zh-CN')) {
        for (const cell of [...run.calls, run.ended]) expect(cell, cell).not.toMatch(ENGLISH);
        expect(run.calls.join(' ')).toContain('bpf_sk_select_reuseport(ngx_quic_sockmap, 键 ');
        expect(run.calls.join(' ')).toContain('sk_select_reuseport，net/core/filter.c');
        expect(run.ended).toBe('exit：返回 1');
      }
    }
    // The selected socket and the miss, as the helper's source decides them (see the file's opening).
    expect(said(inMap(), 'zh-CN')[1]!.calls.join(' ')).toContain('选中套接字 1');
    expect(said(notInMap(), 'zh-CN')[0]!.calls.join(' ')).toContain('此键下没有套接字');
  });

  it('the same runs in English do read as English sentences, so the check above can fail', () => {
    const en = said(notInMap(), 'en')[0]!;
    expect(en.calls.join(' ')).toMatch(ENGLISH);
    expect(en.calls.join(' ')).toContain('no socket at this key');
  });
});

describe("a refused map fill on the Chinese page: the model's facts, the catalogue's words", () => {
  /** What the editor shows for the map text `text` in a group of 4, in `lang` (its frame and the model's reason), or null when the maps build. */
  const refusal = (lang: 'en' | 'zh-CN', text: string, def: Partial<EbpfProgram['maps'][number]> = {}) => {
    const forms = mapForms(helper(), ebpfDefaultMaps(helper(), 4));
    const maps = formMaps([{ ...forms[0]!, def: { ...forms[0]!.def, ...def }, text }], holds);
    if ('problem' in maps) throw new Error('the text reads');
    const r = ebpfCheckMaps(helper(), maps, 4);
    return r && sayUi(lang, 'editor.maps_refused', { message: sayMapRefusal(lang, r) });
  };

  it('a listener the group lacks, a key past a full map and a socket map with 2-byte values read in Chinese, names and numbers as given', () => {
    const cases = [
      // Listener 7 at key 1; the group has listeners 0 to 3.
      { text: '0 0\n1 7', def: {}, has: ['ngx_quic_sockmap', '键 1', '监听套接字 7', '共 4 个'] },
      // A SOCKHASH of 2 entries given 3 keys: the third is one too many (htab's -E2BIG).
      { text: '0 0\n1 1\n2 2', def: { maxEntries: 2 }, has: ['键 2', 'max_entries 2', '-E2BIG'] },
      // A SOCKHASH holds 4- or 8-byte values (reuseport_array_alloc_check's rule, as sock_hash_alloc's).
      { text: '0 0', def: { valueSize: 2 }, has: ['BPF_MAP_TYPE_SOCKHASH', '4 或 8 字节', '2 字节'] },
    ];
    for (const c of cases) {
      const zh = refusal('zh-CN', c.text, c.def);
      expect(zh, c.text).not.toBeNull();
      expect(zh!, zh!).not.toMatch(ENGLISH);
      for (const part of c.has) expect(zh!).toContain(part);
      // The same refusal in English reads as an English sentence, so the check above can fail.
      expect(refusal('en', c.text, c.def)!).toMatch(ENGLISH);
    }
    expect(refusal('en', '0 0\n1 7')).toBe('The maps cannot be filled so: map ngx_quic_sockmap, key 1: listener 7, but the group has 4 (numbered from 0).');
    expect(refusal('zh-CN', '0 0\n1 1')).toBeNull();
  });
});

describe("a bad ELF file on the Chinese page: the model's facts, the catalogue's words", () => {
  /** nginx's helper with its ELF header's e_machine (bytes 18-19, little-endian) set to 62, EM_X86_64 (include/uapi/linux/elf-em.h). */
  const x86 = () => {
    const b = new Uint8Array(readFileSync(OBJECT));
    b[18] = 62;
    b[19] = 0;
    return b;
  };
  const files: [string, Uint8Array, string][] = [
    ['notes.txt', new TextEncoder().encode('not an ELF object\n'), 'not_elf'],
    ['huge.o', new Uint8Array((4 << 20) + 1), 'too_large'],
    ['x86.o', x86(), 'not_bpf'],
  ];
  /** What the editor shows for a file the model does not read, in `lang`. */
  const said = (lang: 'en' | 'zh-CN', name: string, bytes: Uint8Array) => {
    const read = readEbpf(bytes);
    if (read.object !== null) throw new Error(`${name} reads`);
    return { kind: read.refused.kind, text: sayUi(lang, 'editor.elf_bad', { name, message: sayElfError(lang, read.refused) }) };
  };

  it('a text file, a file past the bound and an x86-64 object read in Chinese, with the sizes and the machine as the model gave them', () => {
    for (const [name, bytes, kind] of files) {
      const zh = said('zh-CN', name, bytes);
      expect(zh.kind).toBe(kind);
      // A command in backticks (`clang -target bpf`) is written as it is typed, in either language.
      const prose = (t: string) => t.replace(/`[^`]*`/g, '');
      expect(prose(zh.text), zh.text).not.toMatch(ENGLISH);
      expect(prose(said('en', name, bytes).text)).toMatch(ENGLISH);
    }
    expect(said('zh-CN', 'huge.o', files[1]![1]).text).toBe('huge.o 不是模型能读取的 eBPF 目标文件：目标文件有 4194305 字节，模型最多读取 4194304 字节');
    expect(said('zh-CN', 'x86.o', x86()).text).toContain('面向 X86_64，不是 BPF');
    const en = 'x86.o is not an eBPF object the model reads: the ELF object is for X86_64, not BPF (compile with `clang -target bpf`)';
    expect(said('en', 'x86.o', x86()).text).toBe(en);
  });
});
