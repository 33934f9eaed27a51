/**
 * What the page and the paste worker (src/model/paste-worker.ts) say to
 * each other. The worker holds the parsed connections in wasm memory; the
 * page holds only counts and the rows in view.
 *
 * The records the wasm session takes and returns are its Rust serde types,
 * written by ts-rs into ./generated/ (scripts/gen-types.sh): they are named
 * here, never restated. What is declared below is the worker's own: where
 * the text comes from, progress, and what the worker adds to or composes
 * from the session's answers.
 */
import type { CallLog } from './generated/CallLog';
import type { Layout } from './generated/Layout';
import type { Comparison } from './generated/Comparison';
import type { LayoutRequest as SessionLayoutRequest } from './generated/LayoutRequest';
import type { Observation } from './generated/Observation';
import type { PasteSummary } from './generated/PasteSummary';
import type { Spread } from './generated/Spread';
import type { AnswerRequest } from './generated/AnswerRequest';
import type { Answered } from './generated/Answered';
import type { BadLine } from './generated/BadLine';
import type { ByListeners } from './generated/ByListeners';
import type { ExplainedRow } from './generated/ExplainedRow';
import type { LayoutAnswered } from './generated/LayoutAnswered';
import type { LookupRow } from './generated/LookupRow';
import type { NotedLine } from './generated/NotedLine';
import type { ReadOptions } from './generated/ReadOptions';
import type { Row } from './generated/Row';
import type { Exchange } from './rpc';

export type { AnswerRequest, Answered, BadLine, ByListeners, ExplainedRow, LayoutAnswered, LookupRow, NotedLine, Observation, PasteSummary, ReadOptions, Row };

/** Where the text comes from: typed or pasted text, or a file (read in the worker). */
export type Source = { text: string } | { file: File };

/** Progress of a long call. */
export interface Progress {
  phase: 'read' | 'answer' | 'spread';
  done: number;
  total: number;
}

/** A trace file's group, which the worker adds to the summary to fill the form from. */
export interface TraceGroup {
  kernel: string;
  proto: string;
  listeners: number;
  closed: number[];
  bind: string;
  port: number;
}

/** What reading found: the session's summary, and a trace file's group when the text was one. */
export type ReadSummary = PasteSummary & { trace?: TraceGroup };

/**
 * Several sockets instead of one group: the layout `reuseport-agent predict --layout` reads.
 * The model's `CallLog` also reads the earlier `Layout` form (serde `try_from`), which ts-rs
 * cannot see: the layout is widened here to both.
 */
export type LayoutRequest = Omit<SessionLayoutRequest, 'layout'> & { layout: CallLog | Layout };

/** The observations a key search uses. */
export type Observations = Observation[];

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
