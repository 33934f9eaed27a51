/**
 * The event list: every packet the scene shows, in order, with a cursor
 * for stepping (Packet Tracer's simulation mode). Stepping back moves the
 * cursor only; stepping forward past the end asks for the next events, so
 * a step back followed by a step forward shows the very same event.
 */
import type { Explain, Tuple } from '../../model/index';
import type { Messages } from '../../model/messages';
import type { PacketKind } from './palette';
import type { ReplayCheck } from './replay';

/** Why nothing took a packet: the model's fallback (a tagged outcome), its error message, or neither. */
export type NoTaker = { fallback: Messages['fallback'] } | { error: string } | null;

/**
 * What happened to one packet, as data; each language says it
 * (`DispatchText.what` in src/islands/dispatch-text.ts).
 */
export type EventWhat =
  | { kind: 'syn'; listener: number; slot: number | null }
  | { kind: 'syn-ack'; listener: number }
  | { kind: 'ack'; listener: number }
  | { kind: 'syn-dropped'; why: NoTaker }
  | { kind: 'rst' }
  | { kind: 'datagram'; n: number; listener: number; slot: number | null }
  | { kind: 'datagram-dropped'; n: number; why: NoTaker };

export interface DispatchEvent {
  /** Position in the run, from 0 (kept when old events are dropped). */
  seq: number;
  /** The connection (TCP) or datagram (UDP) it belongs to, from 0. */
  conn: number;
  kind: PacketKind;
  /** Simulated time it was sent, seconds. */
  t: number;
  /** Client index. */
  client: number;
  tuple: Tuple;
  /** Receiving CPU. */
  cpu: number;
  /** The first payload word payload programs read (a datagram carries its number), or null (a SYN carries none). */
  payload: number | null;
  /** Listener the model chose (SYN, UDP) or that the packet belongs to; null for none. */
  listener: number | null;
  /** `socks[]` index the model reported. */
  slot: number | null;
  /** The model's hash (a number) and its hex, when explained. */
  hash: number | null;
  hashHex: string | null;
  /** The group's whole record for the dispatch this packet belongs to (null when no group picked: the reservoir era's scan is the lookup's walk). */
  explain: Explain | null;
  /** What happened to it (said in the page's language where shown). */
  what: EventWhat;
  /** Replaying a trace: the kernel's record of it and the model's answer beside it (the listener is the kernel's). */
  replay?: ReplayCheck;
}

export class EventLog {
  #events: DispatchEvent[] = [];
  /** seq of #events[0]. */
  #base = 0;
  #cursor = -1;
  readonly max: number;
  /**
   * Events let past `max` before the oldest are dropped, in one splice: one
   * splice per pushed connection moved the whole array each time (thousands of
   * times a frame at the highest arrival rates).
   */
  readonly #slack: number;

  /** @param max events kept (up to an eighth more between trims); older ones are dropped. @default 20000 */
  constructor(max = 20000) {
    this.max = max;
    this.#slack = Math.floor(max / 8);
  }

  get length(): number {
    return this.#events.length;
  }
  /** seq of the first kept event. */
  get firstSeq(): number {
    return this.#base;
  }
  /** Next seq to be given out. */
  get nextSeq(): number {
    return this.#base + this.#events.length;
  }
  /** seq under the cursor, or -1 before the first step. */
  get cursor(): number {
    return this.#cursor;
  }
  /** The event under the cursor. */
  current(): DispatchEvent | undefined {
    return this.get(this.#cursor);
  }
  get(seq: number): DispatchEvent | undefined {
    return this.#events[seq - this.#base];
  }
  /** The last `n` events up to and including `seq` (oldest first). */
  window(endSeq: number, n: number): DispatchEvent[] {
    const end = Math.min(endSeq - this.#base + 1, this.#events.length);
    return this.#events.slice(Math.max(0, end - n), Math.max(0, end));
  }
  last(): DispatchEvent | undefined {
    return this.#events[this.#events.length - 1];
  }

  /** Appends events (their seq must be {@link nextSeq} onwards) and drops the oldest beyond `max`. */
  push(evs: DispatchEvent[]): void {
    for (const e of evs) {
      if (e.seq !== this.nextSeq) throw new Error(`event seq ${e.seq} out of order (expected ${this.nextSeq})`);
      this.#events.push(e);
    }
    if (this.#events.length <= this.max + this.#slack) return;
    const over = this.#events.length - this.max;
    if (over > 0) {
      this.#events.splice(0, over);
      this.#base += over;
      if (this.#cursor < this.#base && this.#cursor !== -1) this.#cursor = this.#base;
    }
  }

  /** Moves the cursor to `seq` when kept. */
  seek(seq: number): boolean {
    if (!this.get(seq)) return false;
    this.#cursor = seq;
    return true;
  }

  /** One event on; `more` appends the next events when the cursor is at the end. */
  stepForward(more: () => void): DispatchEvent | undefined {
    if (this.#cursor + 1 >= this.nextSeq) more();
    if (this.#cursor + 1 < this.#base) this.#cursor = this.#base - 1;
    if (this.#cursor + 1 < this.nextSeq) this.#cursor++;
    return this.current();
  }

  /** One event back (stays on the first kept event). */
  stepBack(): DispatchEvent | undefined {
    if (this.#cursor > this.#base) this.#cursor--;
    return this.current();
  }

  clear(): void {
    this.#events = [];
    this.#base = 0;
    this.#cursor = -1;
  }
}
