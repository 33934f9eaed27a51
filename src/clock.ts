/**
 * The one frame clock: every animation on a page ticks from here.
 *
 * Started and stopped explicitly; one `now` per frame handed to every
 * subscriber; `dt` clamped so a frame after a hidden tab or a long pause
 * does not jump; nothing runs while the document is hidden or while the
 * owner says it is off-screen ({@link FrameClock.setVisible}, fed by an
 * IntersectionObserver).
 */

/** Called once per frame. `now` and `dt` are in milliseconds. */
export type FrameCallback = (now: number, dt: number) => void;

/** The scheduling primitives the clock uses; injectable for tests. */
export interface Scheduler {
  request(cb: (t: number) => void): number;
  cancel(handle: number): void;
  /** Whether the document is hidden (a background tab). */
  hidden(): boolean;
}

/** Options of {@link FrameClock}. */
export interface ClockOptions {
  /** Longest `dt` handed out, in milliseconds. @default 100 */
  maxDt?: number;
  /** @default requestAnimationFrame and document.hidden */
  scheduler?: Scheduler;
}

const browserScheduler = (): Scheduler => ({
  request: (cb) => requestAnimationFrame(cb),
  cancel: (h) => cancelAnimationFrame(h),
  hidden: () => typeof document !== 'undefined' && document.hidden,
});

export class FrameClock {
  readonly #subs = new Set<FrameCallback>();
  readonly #maxDt: number;
  readonly #sched: Scheduler;
  #handle: number | null = null;
  #last: number | null = null;
  #visible = true;
  #running = false;
  /** Frames delivered since construction (for tests and benchmarks). */
  frames = 0;
  /** Milliseconds the subscribers took in the last frame (for benchmarks). */
  workMs = 0;

  constructor(options: ClockOptions = {}) {
    this.#maxDt = options.maxDt ?? 100;
    this.#sched = options.scheduler ?? browserScheduler();
  }

  /** Adds a per-frame callback; returns a function removing it. */
  subscribe(cb: FrameCallback): () => void {
    this.#subs.add(cb);
    return () => this.#subs.delete(cb);
  }

  get running(): boolean {
    return this.#running;
  }

  /** Starts ticking (no-op when already running). */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#last = null;
    this.#schedule();
  }

  /** Stops ticking; the next start does not count the stopped time. */
  stop(): void {
    this.#running = false;
    if (this.#handle !== null) this.#sched.cancel(this.#handle);
    this.#handle = null;
    this.#last = null;
  }

  /** Off-screen (false) skips frames without stopping; back on-screen resumes without a jump. */
  setVisible(v: boolean): void {
    if (v === this.#visible) return;
    this.#visible = v;
    this.#last = null;
    if (v && this.#running && this.#handle === null) this.#schedule();
  }

  #schedule(): void {
    this.#handle = this.#sched.request((t) => this.#tick(t));
  }

  #tick(now: number): void {
    this.#handle = null;
    if (!this.#running) return;
    if (!this.#visible) return; // resumed by setVisible(true)
    if (this.#sched.hidden()) {
      this.#last = null;
      this.#schedule();
      return;
    }
    const dt = this.#last === null ? 0 : Math.min(Math.max(now - this.#last, 0), this.#maxDt);
    this.#last = now;
    this.frames++;
    const t0 = performance.now();
    for (const cb of this.#subs) cb(now, dt);
    this.workMs = performance.now() - t0;
    if (this.#running && this.#visible) this.#schedule();
  }
}
