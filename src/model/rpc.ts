/**
 * Request and answer over a Web Worker: each call carries an id; the worker
 * answers with `{ id, progress }` any number of times, then `{ id, result }`
 * or `{ id, error }`. A `stop` message asks the worker's current long call
 * to end early with what it has (the worker checks between chunks).
 */

export interface WorkerLike {
  postMessage(m: unknown, transfer?: Transferable[]): void;
  onmessage: ((e: MessageEvent) => void) | null;
  onerror: ((e: ErrorEvent) => void) | null;
  terminate(): void;
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void; progress?: (p: never) => void };
/** What the worker says about a call. */
type Reply = { id: number; progress?: unknown; result?: unknown; error?: string };
/** What the page asks. */
type Request = { id?: number; type: string; args: unknown };

/** The page's side of the conversation. */
export class Rpc {
  #w: WorkerLike;
  #next = 1;
  #pending = new Map<number, Pending>();

  constructor(w: WorkerLike) {
    this.#w = w;
    w.onmessage = (e: MessageEvent<Reply>) => {
      const m = e.data;
      const p = this.#pending.get(m.id);
      if (!p) return;
      // The worker's progress for a call is of the type the call was made with (see `call`).
      if ('progress' in m && m.progress !== undefined) p.progress?.(m.progress as never);
      else if ('error' in m && m.error !== undefined) {
        this.#pending.delete(m.id);
        p.reject(new Error(m.error));
      } else {
        this.#pending.delete(m.id);
        p.resolve(m.result);
      }
    };
    w.onerror = (e) => {
      for (const p of this.#pending.values()) p.reject(new Error(e.message || 'the worker failed'));
      this.#pending.clear();
    };
  }

  /** Asks for `type`; the answer is a `T`, and any progress reports are `P`s (the worker's handler for `type` says so). */
  call<T, P = never>(type: string, args: unknown, progress?: (p: P) => void): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: (v) => resolve(v as T), reject, progress });
      this.#w.postMessage({ id, type, args });
    });
  }

  /** Asks the running long call to finish early with what it has. */
  stop(): void {
    this.#w.postMessage({ type: 'stop' });
  }

  dispose(): void {
    this.#w.terminate();
    for (const p of this.#pending.values()) p.reject(new Error('stopped'));
    this.#pending.clear();
  }
}

/** The worker's side: registers handlers; each gets its arguments, a progress function and a "stop asked" check. */
export function serve(handlers: Record<string, (args: never, ctx: { progress: (p: unknown) => void; stopped: () => boolean }) => unknown>): void {
  let stop = false;
  self.onmessage = async (e: MessageEvent<Request>) => {
    const m = e.data;
    if (m.type === 'stop') {
      stop = true;
      return;
    }
    const id = m.id!;
    const h = handlers[m.type];
    if (!h) {
      postMessage({ id, error: `unknown request ${m.type}` });
      return;
    }
    stop = false;
    try {
      const result = await h(m.args as never, { progress: (p) => postMessage({ id, progress: p }), stopped: () => stop });
      postMessage({ id, result });
    } catch (err) {
      postMessage({ id, error: err instanceof Error ? err.message : String(err) });
    }
  };
}

/** Lets queued messages (a `stop`) in between chunks of work. */
export function breathe(): Promise<void> {
  return new Promise((r) => setTimeout(r, 0));
}
