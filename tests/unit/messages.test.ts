/**
 * The sentence tables against the model's message types: every tag the model
 * can produce has a template in both languages, no template is left over,
 * and every placeholder is a field of its tag. The tags and fields are read
 * from the declarations ts-rs writes from the Rust types
 * (src/model/generated/message/, scripts/gen-types.sh), so a new variant in
 * the model fails here until both tables say it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fill, keyOf, langOf, placeholders, say, sayBasis, sayEbpfEnd, sayRefusal, sayUi, sayUiCount, TABLES, type Lang } from '../../src/model/messages';

const dir = fileURLToPath(new URL('../../src/model/generated/message/', import.meta.url));

/** Splits `text` at `sep` where no bracket is open. */
function splitTop(text: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if ('{[(<'.includes(c)) depth++;
    else if ('}])>'.includes(c)) depth--;
    else if (c === sep && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

/** The property names of an object type literal `{ a: T, "kind": "x", }`, with the kind's value. */
function objectFields(literal: string): { kind: string | null; fields: string[] } {
  const body = literal.trim().replace(/^\{/, '').replace(/\}$/, '');
  let kind: string | null = null;
  const fields: string[] = [];
  for (const prop of splitTop(body, ',')) {
    const m = /^"?([A-Za-z0-9_]+)"?\s*:\s*(.*)$/s.exec(prop);
    if (!m) throw new Error(`unreadable property ${prop}`);
    if (m[1] === 'kind') kind = JSON.parse(m[2]!) as string;
    else fields.push(m[1]!);
  }
  return { kind, fields };
}

const snake = (name: string) => name.replace(/[A-Z]/g, (c, i: number) => `${i ? '_' : ''}${c.toLowerCase()}`);

/** Every template key the model's message types call for, with the fields its placeholders may name. */
function expectedKeys(): Map<string, string[]> {
  const keys = new Map<string, string[]>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const name = file.replace(/\.ts$/, '');
    const text = readFileSync(dir + file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    const m = new RegExp(`export type ${name} = ([\\s\\S]*);`).exec(text);
    if (!m) throw new Error(`${file}: no declaration of ${name}`);
    const members = splitTop(m[1]!, '|');
    const group = snake(name);
    if (members.every((x) => x.startsWith('"'))) continue; // identifiers (Errno): data, said as they are
    for (const member of members) {
      if (!member.startsWith('{')) throw new Error(`${file}: ${member} is neither a tagged variant nor a struct`);
      const { kind, fields } = objectFields(member);
      keys.set(kind === null ? group : `${group}.${kind}`, fields);
    }
  }
  return keys;
}

describe('sentence tables', () => {
  const expected = expectedKeys();

  it('reads the generated message types', () => {
    // Sanity: the parser found the tagged types and the structs.
    expect(expected.get('refusal_rule.uids_differ')).toEqual(['uid', 'otherUid']);
    expect(expected.get('kernel_source')).toEqual(['func', 'file', 'release']);
    // The eBPF run's records (wasm/model/src/reuseport/ebpf/said.rs) are among them: a tag added there fails below until both tables say it.
    expect(expected.get('ebpf_fault.packet_past_end')).toEqual(['at', 'size', 'end']);
    expect(expected.get('ebpf_unknown.packet_byte_in')).toEqual(['at', 'arg']);
    expect(expected.get('helper_rule.sk_select_reuseport')).toEqual([]);
    expect(expected.get('call_arg.selected')).toEqual(['listener']);
    expect(expected.get('ebpf_end.unknown')).toEqual(['pc', 'what']);
    // So are the refusals of a map fill and of a map definition (ebpf/refused.rs).
    expect(expected.get('map_refusal.no_listener')).toEqual(['map', 'key', 'listener', 'members']);
    expect(expected.get('map_refusal.def')).toEqual(['map', 'why']);
    expect(expected.get('map_def_problem.key_size')).toEqual(['mapType', 'keySize']);
    expect(expected.get('map_def_problem.max_entries_zero')).toEqual([]);
    // And the ELF reader's (ebpf/elf.rs, ebpf/btf.rs).
    expect(expected.get('elf_error.btf_member')).toEqual(['map', 'member', 'why']);
    expect(expected.get('btf_problem.no_size')).toEqual(['id', 'btfKind']);
  });

  it("every helper operand the model names (Operand) has its words in both languages, as the run's faults say them", () => {
    const text = readFileSync(`${dir}Operand.ts`, 'utf8');
    const operands = [...text.replace(/\/\*[\s\S]*?\*\//g, '').matchAll(/"([a-z_]+)"/g)].map((m) => m[1]!);
    expect(operands).toEqual(['key', 'value', 'buffer']);
    for (const lang of Object.keys(TABLES) as Lang[]) for (const o of operands) expect(TABLES[lang], `${lang} ${o}`).toHaveProperty([`ui.ebpf.operand.${o}`]);
  });

  // The widgets' own sentences (`ui.*`) are held below, language against language.
  const outcomes = (lang: Lang) => Object.entries(TABLES[lang]).filter(([key]) => !key.startsWith('ui.'));

  for (const lang of Object.keys(TABLES) as Lang[]) {
    it(`${lang}: one template per tag the model can produce, and no other`, () => {
      expect(
        outcomes(lang)
          .map(([key]) => key)
          .sort(),
      ).toEqual([...expected.keys()].sort());
    });

    it(`${lang}: every placeholder is a field of its tag`, () => {
      for (const [key, template] of outcomes(lang)) {
        const fields = expected.get(key) ?? [];
        for (const p of placeholders(template)) expect(fields, `${lang} ${key}: {${p}}`).toContain(p);
      }
    });
  }

  it('the Chinese templates are written in Chinese', () => {
    const han = /\p{Script=Han}/u;
    for (const [key, t] of Object.entries(TABLES['zh-CN'])) {
      // Exempt: frames of placeholders and punctuation, and code that reads the same in both languages (SK_DROP, socks[…]).
      const text = t.replace(/\{\w+\}/g, '');
      const frame = !/[A-Za-z]/.test(text);
      const code = t === TABLES.en[key] && !/[a-z]+ [a-z]+/.test(text);
      if (!frame && !code) expect(t, key).toMatch(han);
    }
  });
});

describe('interface sentences (ui.*)', () => {
  const ui = (lang: Lang) => Object.keys(TABLES[lang]).filter((k) => k.startsWith('ui.'));

  it('both languages hold the same sentences, each with the same placeholders', () => {
    expect(ui('en').length).toBeGreaterThan(0);
    expect(ui('zh-CN').sort()).toEqual(ui('en').sort());
    for (const key of ui('en')) expect(placeholders(TABLES['zh-CN'][key]!).sort(), key).toEqual(placeholders(TABLES.en[key]!).sort());
  });

  it('a counted sentence has its one and other forms', () => {
    for (const key of ui('en').filter((k) => k.endsWith('.one'))) expect(TABLES.en, key).toHaveProperty([key.replace(/\.one$/, '.other')]);
  });

  it('says a sentence in the language asked, with its fields and counted form', () => {
    expect(sayUiCount('en', 'lookup.sockets', 1, { proto: 'TCP' })).toBe('1 TCP socket');
    expect(sayUiCount('en', 'lookup.sockets', 3, { proto: 'UDP' })).toBe('3 UDP sockets');
    expect(sayUi('zh-CN', 'lookup.no_match', { score: -1 })).toBe('-1（不匹配）');
    expect(sayUi('en', 'lookup.why', { reason: 'no listener' })).toBe('Why: no listener.');
  });
});

describe('rendering', () => {
  it('fills placeholders from the tag, a release as MAJOR.MINOR', () => {
    expect(say('en', 'refusal_rule', { kind: 'ephemeral_exhausted', low: 1024, high: 1025 })).toBe(
      'no port of ip_local_port_range 1024-1025 is free for this socket',
    );
    expect(say('zh-CN', 'refusal_rule', { kind: 'no_groups', since: { major: 4, minor: 6 } })).toContain('4.6');
    expect(keyOf('kernel_source', { func: 'f' })).toBe('kernel_source');
    expect(fill('{a} {b}', { a: null })).toBe(' {b}');
  });

  it("an eBPF run's end says its reason by its own template, a helper's operand in the page's words", () => {
    const fault = { kind: 'fault' as const, pc: 7, why: { kind: 'arg_past_packet' as const, arg: 'key' as const } };
    expect(sayEbpfEnd('en', fault)).toBe('instruction 7: the key runs past data_end');
    expect(sayEbpfEnd('zh-CN', fault)).toBe('第 7 条指令：键越过了 data_end');
    const unknown = { kind: 'unknown' as const, pc: 5, what: { kind: 'packet_byte' as const, at: 6 } };
    expect(sayEbpfEnd('zh-CN', unknown)).toBe('第 5 条指令需要一个模型不掌握的值：数据包字节 data+6（模型不知道的校验和或头部字段）');
  });

  it('a refusal names its rule and its kernel source in either language', () => {
    const r = {
      errno: 'EINVAL' as const,
      rule: { kind: 'v6only_mapped' as const },
      source: { func: 'inet6_bind', file: 'net/ipv6/af_inet6.c', release: { major: 6, minor: 12 } },
      with: null,
    };
    expect(sayRefusal('en', r)).toBe('an IPV6_V6ONLY socket cannot bind a v4-mapped address (inet6_bind, net/ipv6/af_inet6.c, kernel 6.12)');
    expect(sayRefusal('zh-CN', r)).toBe('设置了 IPV6_V6ONLY 的套接字不能绑定 IPv4 映射地址（inet6_bind，net/ipv6/af_inet6.c，内核 6.12）');
  });

  it('a kernel source inside a tag reads as the kernel_source template', () => {
    const o = {
      kind: 'assigned' as const,
      socket: 2,
      source: { func: 'inet_lookup_run_sk_lookup', file: 'net/ipv4/inet_hashtables.c', release: { major: 6, minor: 18 } },
    };
    expect(say('en', 'sk_lookup_outcome', o)).toBe('sk_lookup assigned socket 2 (inet_lookup_run_sk_lookup, net/ipv4/inet_hashtables.c, kernel 6.18)');
    expect(say('zh-CN', 'sk_lookup_outcome', o)).toBe('sk_lookup 程序指定了套接字 2（inet_lookup_run_sk_lookup，net/ipv4/inet_hashtables.c，内核 6.18）');
  });

  it('a profile basis reads as its tree, and its qualifier after it, in either language', () => {
    const mainline = { kind: 'mainline' as const, release: { major: 6, minor: 13 } };
    const commit = { kind: 'qualified' as const, tree: mainline, qualifier: { kind: 'commit' as const, commit: '78c91ae2c6de' } };
    expect(sayBasis('en', commit)).toBe('mainline 6.13, commit 78c91ae2c6de');
    expect(sayBasis('zh-CN', commit)).toBe('主线 6.13，提交 78c91ae2c6de');
    const debian = { kind: 'as_read' as const, tree: { kind: 'debian' as const, version: '6.1.192' } };
    expect(sayBasis('en', debian)).toBe("Debian's 6.1.192 tree");
    expect(sayBasis('zh-CN', debian)).toBe('Debian 6.1.192 源码');
  });

  it('reads the page language from its lang attribute', () => {
    expect(langOf('zh-CN')).toBe('zh-CN');
    expect(langOf('zh')).toBe('zh-CN');
    expect(langOf('en')).toBe('en');
    expect(langOf('')).toBe('en');
  });
});
