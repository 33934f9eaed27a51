/**
 * What the page and the paste worker (src/model/paste-worker.ts) say to
 * each other. The worker holds the parsed connections in wasm memory; the
 * page holds only counts and the rows in view.
 */
import type { GroupSpec } from './generated/GroupSpec';
import type { Keys } from './generated/Keys';
import type { Tuple } from './generated/Tuple';
import type { CallLog } from './generated/CallLog';
import type { Layout } from './generated/Layout';
import type { CallResult } from './generated/CallResult';
import type { Columns } from './generated/Columns';
import type { Decision } from './generated/Decision';
import type { Detected } from './generated/Detected';
import type { Explain } from './generated/Explain';
import type { ListenerRow } from './generated/ListenerRow';
import type { LookupExplain } from './generated/LookupExplain';
import type { LineError } from './generated/message/LineError';
import type { LineNote } from './generated/message/LineNote';
import type { Comparison } from './generated/Comparison';
import type { Spread } from './generated/Spread';
import type { Exchange } from './rpc';

/** Where the text comes from: typed or pasted text, or a file (read in the worker). */
export type Source = { text: string } | { file: File };

/** How to read it. */
export interface ReadOptions {
  /** A format name, or null to detect. */
  format: string | null;
  /** CSV column choice (the detected one unless the user changed it). */
  columns: Columns | null;
  /** The listening side, `ADDR:PORT` or `:PORT` or `ADDR`, or null. */
  bind: string | null;
  /** Swap the decided client and server sides. */
  flip: boolean;
}

/** Progress of a long call. */
export interface Progress {
  phase: 'read' | 'answer' | 'spread';
  done: number;
  total: number;
}

/** What reading found (counts of every kind of line, and the side decision). */
export interface ReadSummary {
  /** The format used (detected or named), with its CSV columns. */
  detected: Detected | null;
  lines: number;
  /** Lines that held a connection. */
  connections: number;
  /** Lines that held a listening socket (LISTEN state), and the first few of them. */
  listening: number;
  listeningAddrs: string[];
  /** Lines skipped, by reason (blank, comment, header, …). */
  skipped: Record<string, number>;
  /** Lines that could not be read (listed with {@link BadLine}). */
  bad: number;
  /** The side decision: its basis and the port (and address) it settled on. */
  decision: Decision;
  /** Connections whose sides could not be decided (listed as bad lines). */
  undecided: number;
  /** Connections that repeat an earlier line's 4-tuple (counted, not answered twice). */
  duplicates: number;
  /** Distinct connections answered: the table's rows. */
  rows: number;
  /** Rows that carry an observed listener. */
  observed: number;
  /** The server side of the first row (for the group's bind), if any. */
  server: { addr: string; port: number } | null;
  /** Reading stopped early (by the user, or at the line bound). */
  partial: boolean;
  /** Connections past the row bound, counted and not kept. */
  cut: number;
  /** Rows that are IPv6. */
  v6: number;
  /** Under the per-line decision: rows by the basis that decided each (`listening`, `format`, `systemPort`, `servicePort`). */
  sides: Record<string, number>;
  /** Rows read with a note (address translation, a dropped IPv6 zone): listed by `notes()`. */
  notes: number;
  /** A trace file's group, to fill the form from. */
  trace?: { kernel: string; proto: string; listeners: number; closed: number[]; bind: string; port: number };
}

/** One unusable line: its number, the format it was read as, and why (a tagged model outcome). */
export interface BadLine {
  line: number;
  format: string | null;
  /** Which message table says the reason: a line the parser refused, or a connection whose sides were not decided. */
  group: 'line_error' | 'undecided';
  reason: { kind: string; [field: string]: unknown };
  text: string;
}

/** The group and the secret to answer under (keys null: no per-tuple answers). */
export interface AnswerRequest {
  kernel: string;
  group: GroupSpec;
  keys: Keys | null;
  cpu: number;
}

/** Several sockets instead of one group: the layout `reuseport-agent predict --layout` reads (a call log, or the earlier form). */
export interface LayoutRequest {
  kernel: string;
  layout: CallLog | Layout;
  keys: Keys | null;
  proto: 'tcp' | 'udp';
  cpu: number;
}

/** The layout's answers: each socket's calls, and per-socket counts under the keys. */
export interface LayoutAnswered {
  results: CallResult[];
  sockets: number;
  counts: number[] | null;
  unrouted: number;
  /** Rows whose line shows another protocol than the packets': not answered. */
  mismatched: number;
  /** The first of them, as the model refuses it. */
  mismatch: LineError | null;
}

/** Per-listener counts: under the named secret (null without one), and as observed (null when no line carried one). */
export interface Answered {
  listeners: number;
  counts: number[] | null;
  observed: number[] | null;
  /** Rows that reach no listener of the group (another port or address). */
  unrouted: number;
  /** Rows whose observed listener differs from the answer under the named secret. */
  disagree: number;
  /** Rows whose line shows another protocol than the group's: not answered. */
  mismatched: number;
  /** The first of them, as the model refuses it. */
  mismatch: LineError | null;
}

/** A row read with a note: its line and the model's tagged note. */
export interface NotedLine {
  line: number;
  note: LineNote;
}

/** A row as the table shows it. */
export interface Row {
  line: number;
  client: string;
  server: string;
  listener: number | null;
  observed: number | null;
}

/** The model's record for one row of the table (under a named secret). */
export interface ExplainedRow {
  line: number;
  explain: Explain;
}

/** The full lookup's record for one row, under the layout answered last. */
export interface LookupRow {
  line: number;
  explain: LookupExplain;
}

/** The expected skew of the same connections over other group sizes. */
export interface ByListeners {
  rows: ListenerRow[];
}

/** The observations a key search uses. */
export type Observations = { tuple: Tuple; listener: number }[];

/** The simulation's answer: the spread over random boots, the observed counts against it, and other group sizes. */
export interface SpreadAnswer {
  spread: Spread;
  comparison: Comparison | null;
  compareError: string | null;
  byListeners: ByListeners;
}

/** Every request of the page to the paste worker: its arguments, its answer, its progress. */
export type PasteProtocol = {
  read: Exchange<{ source: Source; options: ReadOptions }, ReadSummary, Progress>;
  answer: Exchange<AnswerRequest, Answered, Progress>;
  answerLayout: Exchange<LayoutRequest, LayoutAnswered>;
  explainLayout: Exchange<{ index: number; cpu: number }, LookupRow>;
  spread: Exchange<{ req: AnswerRequest; boots: number | null; observed: number[] | null }, SpreadAnswer, Progress>;
  filter: Exchange<{ listener: number | null; query: string }, number>;
  rows: Exchange<{ start: number; count: number }, Row[]>;
  bad: Exchange<{ start: number; count: number }, BadLine[]>;
  notes: Exchange<{ start: number; count: number }, NotedLine[]>;
  explain: Exchange<{ index: number; req: AnswerRequest }, ExplainedRow>;
  observations: Exchange<Record<string, never>, Observations>;
  export: Exchange<{ kind: 'csv' | 'json'; meta: { secret: string | null; spread: unknown } }, Blob>;
};
