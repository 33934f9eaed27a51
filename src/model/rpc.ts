/**
 * Request and answer over a Web Worker: each call carries an id; the worker
 * answers with `{ id, progress }` any number of times, then `{ id, result }`
 * or `{ id, error }`. A `stop` message asks the worker's current long call
 * to end early with what it has (the worker checks between chunks).
 *
 * Both sides are typed by one protocol map (`PasteProtocol`, `SimProtocol`,
 * `DiagnoseProtocol`): per request type, its arguments, its answer and its
 * progress reports. The page's `Rpc<P>` can only ask what `P` lists, and the
 * worker's `serve<P>` must answer every request of `P` with its type.
 */

export interface WorkerLike {
  postMessage(m: unknown, transfer?: Transferable[]): void;
  onmessage: ((e: MessageEvent) => void) | null;
  onerror: ((e: ErrorEvent) => void) | null;
  terminate(): void;
}

/** One request of a protocol: what the page sends, what the worker answers, and what it reports meanwhile. */
export interface Exchange<A, R, P = never> {
  args: A;
  result: R;
  progress: P;
}

/** A protocol map: request type → its {@link Exchange}. */
export type Protocol = { [type: string]: Exchange<unknown, unknown, unknown> };

/** What a handler of request `E` is given besides its arguments. */
export interface Ctx<P> {
  progress: (p: P) => void;
  stopped: () => boolean;
}

/** The worker's handlers for protocol `P`: one per request type, each answering with that request's type. */
export type Handlers<P extends Protocol> = {
  [K in keyof P]: (args: P[K]['args'], ctx: Ctx<P[K]['progress']>) => P[K]['result'] | Promise<P[K]['result']>;
};

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void; progress?: (p: never) => void };
/** What the worker says about a call. */
type Reply = { id: number; progress?: unknown; result?: unknown; error?: string };
/** What the page asks. */
type Request = { id?: number; type: string; args: unknown };

/** The page's side of the conversation. */
export class Rpc<P extends Protocol> {
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

  /** Asks for `type` with its arguments; answers with its result, and passes its progress reports to `progress`. */
  call<K extends keyof P & string>(type: K, args: P[K]['args'], progress?: (p: P[K]['progress']) => void): Promise<P[K]['result']> {
    const id = this.#next++;
    return new Promise<P[K]['result']>((resolve, reject) => {
      // The worker answers this id with the result of `type`, typed by the same map on its side (`serve`).
      this.#pending.set(id, { resolve: (v) => resolve(v as P[K]['result']), reject, progress });
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
export function serve<P extends Protocol>(handlers: Handlers<P>): void {
  let stop = false;
  self.onmessage = async (e: MessageEvent<Request>) => {
    const m = e.data;
    if (m.type === 'stop') {
      stop = true;
      return;
    }
    const id = m.id!;
    const h = Object.hasOwn(handlers, m.type) ? (handlers[m.type] as (args: unknown, ctx: Ctx<unknown>) => unknown) : undefined;
    if (!h) {
      postMessage({ id, error: `unknown request ${m.type}` });
      return;
    }
    stop = false;
    try {
      const result = await h(m.args, { progress: (p) => postMessage({ id, progress: p }), stopped: () => stop });
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
