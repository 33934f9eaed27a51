/**
 * An eBPF program's run as display data: what it did (the helper calls
 * with their results, the instructions taken with the register each wrote)
 * and how it ended, then the maps as the run left them. No DOM and no
 * kernel rule: every value shown is one the model recorded.
 */
import type { EbpfRun } from '../model/generated/EbpfRun';
import type { MapFill } from '../model/generated/MapFill';
import { say, sayEbpfEnd, sayEbpfUnknown, sayUi, type Lang } from '../model/messages';
import type { Row, Table } from './card';

/** The rows and tables of one run, for the program's section of the card. */
export interface EbpfRunView {
  rows: Row[];
  tables: Table[];
}

/** The run as the card shows it: the helper calls first (what decided), then every instruction taken. */
export function ebpfRunView(run: EbpfRun, lang: Lang): EbpfRunView {
  const t = (k: Parameters<typeof sayUi>[1], f: Record<string, string | number> = {}) => sayUi(lang, k, f);
  const rows: Row[] = [
    { label: t('ebpf.taken'), value: run.steps.length < run.taken ? t('ebpf.taken_some', { n: run.taken, shown: run.steps.length }) : String(run.taken) },
    { label: t('ebpf.ended'), value: sayEbpfEnd(lang, run.end) },
  ];
  if (run.selected !== undefined) rows.push({ label: t('ebpf.selected'), value: t('ebpf.listener', { n: run.selected }) });
  if (run.readHash) rows.push({ label: t('ebpf.read_hash'), value: t('ebpf.read_hash_why') });
  if (run.drewRandom) rows.push({ label: t('ebpf.drew_random'), value: t('ebpf.drew_random_why') });
  const calls: Table = {
    caption: run.calls.length === 0 ? t('ebpf.no_calls') : t('ebpf.calls'),
    // Three columns, so the table fits a phone: the call with its arguments, then its result with the rule that decides it.
    head: [t('ebpf.col_pc'), t('ebpf.col_call'), t('ebpf.col_result')],
    rows: run.calls.map((c) => [
      String(c.pc),
      `${c.helper}(${c.args.map((a) => say(lang, 'call_arg', a)).join(', ')})`,
      t('ebpf.result_rule', { result: c.result, rule: say(lang, 'helper_rule', c.rule), source: say(lang, 'helper_source', c.source) }),
    ]),
  };
  const steps: Table = {
    caption: t('ebpf.steps'),
    head: [t('ebpf.col_pc'), t('ebpf.col_reg'), t('ebpf.col_value')],
    rows: run.steps.map((s) => [
      String(s.pc),
      s.reg === undefined ? '' : `r${s.reg}`,
      s.unknown ? t('ebpf.unknown_value', { what: sayEbpfUnknown(lang, s.unknown) }) : (s.value ?? ''),
    ]),
    highlight: run.steps.length - 1,
  };
  return { rows, tables: run.calls.length === 0 ? [steps] : [calls, steps] };
}

/** A map key or value as the reader writes them in the form (numbers in decimal; sockets and maps by name). */
export function fillValue(v: MapFill['entries'][number][1]): string {
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return `hex:${v}`;
  if ('socket' in v) return String(v.socket);
  return `map:${v.map}`;
}

/** A map key as the form writes it. */
export function fillKey(k: MapFill['entries'][number][0]): string {
  return typeof k === 'number' ? String(k) : `hex:${k}`;
}

/** The maps after the run, one table each (key, value), as the model gave them. */
export function mapsAfterTables(maps: readonly MapFill[], lang: Lang): Table[] {
  return maps.map((m) => ({
    caption: sayUi(lang, 'ebpf.map_after', { map: m.map, n: m.entries.length }),
    head: [sayUi(lang, 'ebpf.col_key'), sayUi(lang, 'ebpf.col_value')],
    rows: m.entries.map(([k, v]) => [fillKey(k), fillValue(v)]),
  }));
}
