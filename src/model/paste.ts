/**
 * The page's handle on the paste worker (src/model/paste-worker.ts), and the
 * shareable URL of the paste page's settings. The worker parses with the
 * model's parsers, decides the sides, answers and simulates; this file only
 * carries requests and answers.
 */
import { maxGroupMembers } from './index';
import { Rpc } from './rpc';
import type {
  AnswerRequest,
  Answered,
  BadLine,
  NotedLine,
  ByListeners,
  ExplainedRow,
  LayoutAnswered,
  LayoutRequest,
  LookupRow,
  Observations,
  PasteProtocol,
  Progress,
  ReadOptions,
  ReadSummary,
  Row,
  Source,
  SpreadAnswer,
} from './paste-protocol';
import type { Spread } from './generated/Spread';
import type { Comparison } from './generated/Comparison';
import type { ListenerRow } from './generated/ListenerRow';

export type { Spread, Comparison, ListenerRow, ByListeners, SpreadAnswer };
export type { Columns } from './generated/Columns';
export type { Role } from './generated/Role';

/** Files larger than this are refused before reading (about 12 M lines of `ss -tn`). */
export const MAX_FILE_BYTES = 1 << 30;
/** Text longer than this does not go into a shareable URL. */
export const MAX_URL_TEXT = 4000;

/** One paste worker and the connections it holds. */
export class PasteSession {
  #rpc?: Rpc<PasteProtocol>;

  #worker(): Rpc<PasteProtocol> {
    this.#rpc ??= new Rpc(new Worker(new URL('./paste-worker.ts', import.meta.url), { type: 'module' }));
    return this.#rpc;
  }

  /** Reads and parses `source`, deciding the sides; replaces what the worker held. */
  read(source: Source, options: ReadOptions, progress?: (p: Progress) => void): Promise<ReadSummary> {
    return this.#worker().call('read', { source, options }, progress);
  }

  /** Per-listener counts for the group (under `keys` when given). */
  answer(req: AnswerRequest, progress?: (p: Progress) => void): Promise<Answered> {
    return this.#worker().call('answer', req, progress);
  }

  /** The full listener lookup over a layout of sockets (the input must have been read with `lookup: true`). */
  answerLayout(req: LayoutRequest): Promise<LayoutAnswered> {
    return this.#worker().call('answerLayout', req);
  }

  /** The full lookup's record for row `index` under the layout answered last. */
  explainLayout(index: number, cpu = 0): Promise<LookupRow> {
    return this.#worker().call('explainLayout', { index, cpu });
  }

  /** The secret-free simulation over `boots` random boots (null: as many as fit the worker's budget), compared with `observed` counts when given. */
  spread(req: AnswerRequest, boots: number | null, observed: number[] | null, progress?: (p: Progress) => void): Promise<SpreadAnswer> {
    return this.#worker().call('spread', { req, boots, observed }, progress);
  }

  /** Limits the table to one listener (under the secret, or observed) and to rows whose text contains `query`; returns the row count. */
  filter(f: { listener: number | null; query: string }): Promise<number> {
    return this.#worker().call('filter', f);
  }

  /** Rows `start .. start + count` of the filtered table. */
  rows(start: number, count: number): Promise<Row[]> {
    return this.#worker().call('rows', { start, count });
  }

  /** Unusable lines `start .. start + count`. */
  bad(start: number, count: number): Promise<BadLine[]> {
    return this.#worker().call('bad', { start, count });
  }

  /** Rows read with a note (address translation, a dropped zone), `start .. start + count`. */
  notes(start: number, count: number): Promise<NotedLine[]> {
    return this.#worker().call('notes', { start, count });
  }

  /** The model's record for row `index` of the filtered table. */
  explain(index: number, req: AnswerRequest): Promise<ExplainedRow> {
    return this.#worker().call('explain', { index, req });
  }

  /** Rows that carry an observed listener, for the key search. */
  observations(): Promise<Observations> {
    return this.#worker().call('observations', {});
  }

  /** Every row as CSV (the page's own line format in the first column, so it reads back) or JSON. */
  export(kind: 'csv' | 'json', meta: { secret: string | null; spread: unknown }): Promise<Blob> {
    return this.#worker().call('export', { kind, meta });
  }

  /** Asks the running read or simulation to stop and answer with what it has. */
  stop(): void {
    this.#rpc?.stop();
  }

  dispose(): void {
    this.#rpc?.dispose();
    this.#rpc = undefined;
  }
}

/** The paste page's settings as URL parameters. */
export interface UrlState {
  kernel?: string;
  proto?: string;
  listeners?: string;
  closed?: string;
  bind?: string;
  format?: string;
  flip?: boolean;
  secret?: string;
  inner?: string;
  mode?: string;
  counts?: string;
  text?: string | null;
}

/** Each parameter's rule: the same as its form field's. */
const RULES: Record<string, (v: string) => boolean> = {
  kernel: (v) => /^[0-9]{1,2}\.[0-9]{1,3}[0-9A-Za-z.+_~-]{0,60}$/.test(v) || v === 'auto',
  proto: (v) => v === 'tcp' || v === 'udp',
  listeners: (v) => /^[0-9]{1,5}$/.test(v) && Number(v) >= 1 && Number(v) <= maxGroupMembers(),
  closed: (v) => /^[0-9]{1,5}(,[0-9]{1,5}){0,1023}$/.test(v),
  bind: (v) => v.length <= 60 && /^[0-9A-Fa-f.:[\]]+$/.test(v),
  format: (v) => /^[a-z-]{1,20}$/.test(v),
  flip: (v) => v === '1' || v === '0',
  secret: (v) => /^(0x)?[0-9A-Fa-f]{1,8}$/.test(v),
  inner: (v) => /^(0x)?[0-9A-Fa-f]{1,8}$/.test(v),
  mode: (v) => ['none', 'typed', 'random', 'recovered'].includes(v),
  counts: (v) => v.length <= 4000 && /^[0-9,;\s]*$/.test(v),
  text: (v) => v.length <= MAX_URL_TEXT,
};

/** Reads the settings from a URL; each bad value is dropped and named. */
export function readUrlState(href: string): { state: UrlState; errors: { param: string; value: string }[] } {
  const q = new URL(href).searchParams;
  const state: UrlState = {};
  const errors: { param: string; value: string }[] = [];
  for (const [k, rule] of Object.entries(RULES)) {
    const v = q.get(k);
    if (v === null) continue;
    if (!rule(v)) errors.push({ param: k, value: v.length > 40 ? `${v.slice(0, 40)}…` : v });
    else Object.assign(state, { [k]: k === 'flip' ? v === '1' : v });
  }
  return { state, errors };
}

/** The URL with these settings, or undefined when the text is too large for a URL. */
export function writeUrlState(href: string, s: UrlState): string | undefined {
  if (s.text && s.text.length > MAX_URL_TEXT) return undefined;
  const u = new URL(href);
  u.search = '';
  for (const [k, v] of Object.entries(s)) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    if (k === 'mode' && v === 'none') continue;
    u.searchParams.set(k, v === true ? '1' : String(v));
  }
  return u.toString();
}
