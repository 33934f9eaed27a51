/**
 * The model's outcomes in words, once per language. The model's records
 * carry tagged data (`generated/message/`), never sentences; the tables
 * `messages/en.json` and `messages/zh-CN.json` at the repository root hold
 * one template per tag, and the agent's CLI uses the same English table.
 *
 * A tagged type `FooBar` (tag `kind`) is said by the template
 * `"foo_bar.<kind>"`, a struct `FooBar` by `"foo_bar"`; a template's
 * `{placeholders}` are the fields of its tag (tests/unit/messages.test.ts
 * holds both tables to that). The widgets' own sentences are the keys
 * `ui.<name>` of the same tables ({@link sayUi}), held to the same keys and
 * placeholders in both languages. No DOM: the caller says which language.
 */
import en from '../../messages/en.json';
import zhCN from '../../messages/zh-CN.json';
import type { BasisQualifier } from './generated/message/BasisQualifier';
import type { BasisTree } from './generated/message/BasisTree';
import type { CandidateOutcome } from './generated/message/CandidateOutcome';
import type { EraBasis } from './generated/message/EraBasis';
import type { Fallback } from './generated/message/Fallback';
import type { JhashRole } from './generated/message/JhashRole';
import type { KernelSource } from './generated/message/KernelSource';
import type { LaddrReason } from './generated/message/LaddrReason';
import type { LookupReason } from './generated/message/LookupReason';
import type { Note } from './generated/message/Note';
import type { ProgramOutcome } from './generated/message/ProgramOutcome';
import type { ProgramReturn } from './generated/message/ProgramReturn';
import type { ProgramSummary } from './generated/message/ProgramSummary';
import type { Refusal } from './generated/message/Refusal';
import type { RefusalRule } from './generated/message/RefusalRule';
import type { ReservoirOutcome } from './generated/message/ReservoirOutcome';
import type { ResetReason } from './generated/message/ResetReason';
import type { RingOutcome } from './generated/message/RingOutcome';
import type { SkLookupOutcome } from './generated/message/SkLookupOutcome';
import type { TableName } from './generated/message/TableName';
import type { LineError } from './generated/message/LineError';
import type { Undecided } from './generated/message/Undecided';
import type { Verdict } from './generated/message/Verdict';
import type { Skip } from './generated/message/Skip';
import type { LineNote } from './generated/message/LineNote';
import type { CountError } from './generated/message/CountError';
import type { DiagnosisVerdict } from './generated/message/DiagnosisVerdict';
import type { CallArg } from './generated/message/CallArg';
import type { EbpfEnd } from './generated/message/EbpfEnd';
import type { EbpfFault } from './generated/message/EbpfFault';
import type { EbpfUnknown } from './generated/message/EbpfUnknown';
import type { HelperRule } from './generated/message/HelperRule';
import type { HelperSource } from './generated/message/HelperSource';
import type { BtfProblem } from './generated/message/BtfProblem';
import type { ElfError } from './generated/message/ElfError';
import type { MapDefProblem } from './generated/message/MapDefProblem';
import type { MapRefusal } from './generated/message/MapRefusal';

export type { Refusal };
export type { Errno } from './generated/message/Errno';

/** A language the site is written in. */
export type Lang = 'en' | 'zh-CN';

/** Each language's sentence table: template per key. */
export const TABLES: Readonly<Record<Lang, Readonly<Record<string, string>>>> = { en, 'zh-CN': zhCN };

/** The language for a page's `lang` attribute: a `zh` prefix reads Chinese, anything else English. */
export function langOf(lang: string): Lang {
  return lang.toLowerCase().startsWith('zh') ? 'zh-CN' : 'en';
}

/** The message types by table name. */
export interface Messages {
  era_basis: EraBasis;
  basis_tree: BasisTree;
  basis_qualifier: BasisQualifier;
  refusal_rule: RefusalRule;
  candidate_outcome: CandidateOutcome;
  kernel_source: KernelSource;
  program_summary: ProgramSummary;
  program_return: ProgramReturn;
  program_outcome: ProgramOutcome;
  ring_outcome: RingOutcome;
  reservoir_outcome: ReservoirOutcome;
  fallback: Fallback;
  note: Note;
  lookup_reason: LookupReason;
  sk_lookup_outcome: SkLookupOutcome;
  table_name: TableName;
  laddr_reason: LaddrReason;
  jhash_role: JhashRole;
  reset_reason: ResetReason;
  line_error: LineError;
  undecided: Undecided;
  verdict: Verdict;
  skip: Skip;
  line_note: LineNote;
  count_error: CountError;
  diagnosis_verdict: DiagnosisVerdict;
  helper_rule: HelperRule;
  helper_source: HelperSource;
  call_arg: CallArg;
  ebpf_end: EbpfEnd;
  ebpf_unknown: EbpfUnknown;
  ebpf_fault: EbpfFault;
  map_refusal: MapRefusal;
  map_def_problem: MapDefProblem;
  elf_error: ElfError;
  btf_problem: BtfProblem;
}

/** How a field's value reads in a sentence: strings as they are, numbers in decimal, a release `{major, minor}` as `6.18`. */
function fieldText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') {
    if ('major' in v && 'minor' in v && typeof v.major === 'number' && typeof v.minor === 'number') return `${v.major}.${v.minor}`;
    return JSON.stringify(v);
  }
  // A measured fraction (a percentile rank) reads to one decimal.
  if (typeof v === 'number' && !Number.isInteger(v)) return v.toFixed(1);
  return String(v);
}

/** The `{name}` placeholders of a template, in order. */
export function placeholders(template: string): string[] {
  return [...template.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]!);
}

/**
 * Fills a template's placeholders: from `given` first (parts already said),
 * then from the fields of `fields`. A placeholder with no value stays as written.
 */
export function fill(template: string, fields: object, given: Record<string, string> = {}): string {
  return template.replace(/\{([A-Za-z0-9_]+)\}/g, (whole, name: string) => {
    if (name in given) return given[name]!;
    if (!(name in fields)) return whole;
    const value: unknown = Reflect.get(fields, name);
    return fieldText(value);
  });
}

/** The table key of a value of message type `group`: `group.kind` for a tagged value, `group` otherwise. */
export function keyOf(group: string, value: object): string {
  const kind = 'kind' in value ? value.kind : undefined;
  return typeof kind === 'string' ? `${group}.${kind}` : group;
}

function template(lang: Lang, key: string): string {
  // A key missing in one language reads in English rather than not at all.
  return TABLES[lang][key] ?? TABLES.en[key] ?? key;
}

const isSource = (v: unknown): v is KernelSource => typeof v === 'object' && v !== null && 'func' in v && 'file' in v;

/** The fields of `value` that are kernel sources, each said by the `kernel_source` template. */
function sources(lang: Lang, value: object): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) if (isSource(v)) out[k] = fill(template(lang, 'kernel_source'), v);
  return out;
}

/** Says one outcome in `lang`; `given` says fields the caller words itself (a field's name in this language). */
export function say<G extends keyof Messages>(lang: Lang, group: G, value: Messages[G], given: Record<string, string> = {}): string {
  const out = fill(template(lang, keyOf(group, value)), value, { ...sources(lang, value), ...given });
  // A Chinese template spaces a placeholder off for a Latin word ("ss 输出"); filled with a Chinese one ("地址对格式"), the
  // space would stand between two Chinese characters, where Chinese writes none.
  return lang === 'zh-CN' ? out.replace(CJK_GAP, '$1') : out;
}

/** The interface sentences of the catalogue: the keys `ui.<name>` of both tables, by name. */
export type UiKey = { [K in keyof typeof en]: K extends `ui.${infer R}` ? R : never }[keyof typeof en];
/** The names of the sentences said in two forms by a count (`ui.<name>.one`, `ui.<name>.other`). */
export type UiCountKey = { [K in UiKey]: K extends `${infer R}.one` ? R : never }[UiKey];

/**
 * Says an interface sentence (`ui.<key>`) in `lang`, its `{placeholders}`
 * filled from `fields`: the widgets' facts said by the catalogue, as the
 * model's outcomes are by {@link say}.
 */
export function sayUi(lang: Lang, key: UiKey, fields: Record<string, string | number> = {}): string {
  const out = fill(template(lang, `ui.${key}`), {}, stringsOf(fields));
  return lang === 'zh-CN' ? out.replace(CJK_GAP, '$1') : out;
}

/** Says `ui.<key>.one` when `n` is 1, else `ui.<key>.other`, with `n` among the fields. */
export function sayUiCount(lang: Lang, key: UiCountKey, n: number, fields: Record<string, string | number> = {}): string {
  return sayUi(lang, `${key}.${n === 1 ? 'one' : 'other'}` as UiKey, { n, ...fields });
}

/** The names of one widget's sentences: the keys `ui.<widget>.<name>`, by name. */
export type WidgetKey<W extends string> = { [K in UiKey]: K extends `${W}.${infer R}` ? R : never }[UiKey];

/** One widget's words in one language: its sentences (`ui.<widget>.*`) and the catalogue's shared ones, with numbers as `lang` writes them. */
export interface Words<W extends string> {
  lang: Lang;
  /** Says `ui.<widget>.<key>` with its fields. */
  say(key: WidgetKey<W>, fields?: Record<string, string | number>): string;
  /** Says `ui.<widget>.<key>.one` when `n` is 1, else `.other`, with `n` (written as `lang` writes numbers) among the fields. */
  count(key: WidgetKey<W> extends infer K ? (K extends `${infer R}.one` ? R : never) : never, n: number, fields?: Record<string, string | number>): string;
  /** A number as `lang` writes it (digit groups), with at most `digits` decimals (default 3). */
  num(x: number, digits?: number): string;
  /** The sentences `ui.<widget>.<key>.0` … `.<length - 1>`, in order. */
  list(key: string, length: number): string[];
  /** The sentences `ui.<widget>.<key>.<id>` for each id, by id. */
  record<K extends string>(key: string, ids: readonly K[]): Record<K, string>;
}

/** A Chinese character or Chinese punctuation. */
const HAN = /[\p{Script=Han}，。：；、（）“”]/u;

/**
 * Fills a template's placeholders from `fields`. In Chinese, a space the
 * template sets beside a placeholder (for a Latin word or a number) is
 * dropped when the value put there starts or ends with a Chinese character;
 * spaces the template writes elsewhere stay as written.
 */
function fillSpaced(lang: Lang, template: string, fields: Record<string, string>): string {
  if (lang !== 'zh-CN') return fill(template, {}, fields);
  return template.replace(/( *)\{([A-Za-z0-9_]+)\}( *)/g, (whole: string, before: string, name: string, after: string, at: number, all: string) => {
    const value = fields[name];
    if (value === undefined) return whole;
    const gapBefore = before && HAN.test(all[at - 1] ?? '') && HAN.test(value[0] ?? '') ? '' : before;
    const gapAfter = after && HAN.test(all[at + whole.length] ?? '') && HAN.test(value.at(-1) ?? '') ? '' : after;
    return gapBefore + value + gapAfter;
  });
}

/** The words of the widget `widget` in `lang` (see {@link Words}). */
export function words<W extends string>(lang: Lang, widget: W): Words<W> {
  const num = (x: number, digits = 3) => x.toLocaleString(lang, { maximumFractionDigits: digits });
  const say = (key: string, fields: Record<string, string | number> = {}) => fillSpaced(lang, template(lang, `ui.${widget}.${key}`), stringsOf(fields));
  return {
    lang,
    say,
    count: (key, n, fields = {}) => say(`${key}.${n === 1 ? 'one' : 'other'}`, { n: num(n), ...fields }),
    num,
    list: (key, length) => Array.from({ length }, (_, i) => say(`${key}.${i}`)),
    record: <K extends string>(key: string, ids: readonly K[]) => Object.fromEntries(ids.map((id) => [id, say(`${key}.${id}`)])) as Record<K, string>,
  };
}

/** Fields as they read: numbers in decimal, strings as they are. */
function stringsOf(fields: Record<string, string | number>): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)]));
}

/** A run of spaces between two Chinese characters (or Chinese punctuation). */
const CJK_GAP = /([\p{Script=Han}，。：；、（）“”])[ \t]+(?=[\p{Script=Han}，。：；、（）“”])/gu;

/**
 * A line that is not what its format says (the model's `LineError`), in `lang`: the field and the format in the
 * page's words (`ui.paste.field_words.*`, `ui.paste.format_words.*`), never their ids.
 */
export function sayLineError(lang: Lang, e: LineError): string {
  const given: Record<string, string> = {};
  if ('field' in e) given.field = sayUi(lang, `paste.field_words.${e.field}` as UiKey);
  if ('format' in e) given.format = sayUi(lang, `paste.format_words.${e.format}` as UiKey);
  return say(lang, 'line_error', e, given);
}

/** A refused call in one sentence: the rule and where the kernel applies it. */
export function sayRefusal(lang: Lang, r: Refusal): string {
  return fill(template(lang, 'refusal'), r, { ...sources(lang, r), rule: say(lang, 'refusal_rule', r.rule) });
}

/** Where a profile's rules were read (the source tree and what qualifies it), as a phrase of `lang`. */
export function sayBasis(lang: Lang, b: EraBasis): string {
  const given: Record<string, string> = { tree: say(lang, 'basis_tree', b.tree) };
  if (b.kind === 'qualified') given.qualifier = say(lang, 'basis_qualifier', b.qualifier);
  return say(lang, 'era_basis', b, given);
}

/** Why an eBPF run lacked a value (the model's `EbpfUnknown`), in `lang`: a helper's operand in the page's words (`ui.ebpf.operand.*`). */
export function sayEbpfUnknown(lang: Lang, u: EbpfUnknown): string {
  return say(lang, 'ebpf_unknown', u, 'arg' in u ? { arg: sayUi(lang, `ebpf.operand.${u.arg}`) } : {});
}

/** What an eBPF run did that the verifier refuses (the model's `EbpfFault`), in `lang`, its operand in the page's words. */
export function sayEbpfFault(lang: Lang, f: EbpfFault): string {
  return say(lang, 'ebpf_fault', f, 'arg' in f ? { arg: sayUi(lang, `ebpf.operand.${f.arg}`) } : {});
}

/** How an eBPF run ended (the model's `EbpfEnd`), in `lang`: its reason said by its own template. */
export function sayEbpfEnd(lang: Lang, end: EbpfEnd): string {
  switch (end.kind) {
    case 'returned':
      return say(lang, 'ebpf_end', end);
    case 'unknown':
      return say(lang, 'ebpf_end', end, { what: sayEbpfUnknown(lang, end.what) });
    default:
      return say(lang, 'ebpf_end', end, { why: sayEbpfFault(lang, end.why) });
  }
}

/** Why the maps as filled cannot be built (the model's `MapRefusal`), in `lang`: a definition's fault said by its own template. */
export function sayMapRefusal(lang: Lang, r: MapRefusal): string {
  return say(lang, 'map_refusal', r, r.kind === 'def' ? { why: say(lang, 'map_def_problem', r.why) } : {});
}

/** Why an ELF object could not be read (the model's `ElfError`), in `lang`: a BTF fault or a map definition's said by its own template. */
export function sayElfError(lang: Lang, e: ElfError): string {
  switch (e.kind) {
    case 'btf':
    case 'btf_member':
      return say(lang, 'elf_error', e, { why: say(lang, 'btf_problem', e.why) });
    case 'map_def':
      return say(lang, 'elf_error', e, { why: say(lang, 'map_def_problem', e.why) });
    default:
      return say(lang, 'elf_error', e);
  }
}
