// The page-to-worker protocol: one map types both sides (src/model/rpc.ts). Here the page's Rpc
// talks to serve() through a fake worker in the same thread, so the messages really cross.
import { afterEach, describe, expect, it } from 'vitest';
import { Rpc, serve, type Exchange, type WorkerLike } from '../../src/model/rpc';

type Demo = {
  double: Exchange<{ n: number }, number, { done: number }>;
  fail: Exchange<Record<string, never>, never>;
};

const g = globalThis as unknown as { self?: { onmessage: ((e: MessageEvent) => void) | null }; postMessage?: (m: unknown) => void };
const saved = { self: g.self, postMessage: g.postMessage };
afterEach(() => {
  g.self = saved.self;
  g.postMessage = saved.postMessage;
});

/** A worker whose handlers run in this thread: the page's messages go to serve()'s onmessage, its replies come back. */
function fakeWorker(): WorkerLike {
  const worker: WorkerLike = { postMessage: () => {}, onmessage: null, onerror: null, terminate: () => {} };
  g.self = { onmessage: null };
  g.postMessage = (m) => queueMicrotask(() => worker.onmessage?.({ data: m } as MessageEvent));
  worker.postMessage = (m) => queueMicrotask(() => g.self!.onmessage?.({ data: m } as MessageEvent));
  return worker;
}

describe('rpc', () => {
  it('answers a call with its result and passes its progress on', async () => {
    const w = fakeWorker();
    serve<Demo>({
      double: ({ n }, ctx) => {
        ctx.progress({ done: 1 });
        return 2 * n;
      },
      fail: () => {
        throw new Error('refused on purpose');
      },
    });
    const rpc = new Rpc<Demo>(w);
    const seen: number[] = [];
    await expect(rpc.call('double', { n: 21 }, (p) => seen.push(p.done))).resolves.toBe(42);
    expect(seen).toEqual([1]);
    await expect(rpc.call('fail', {})).rejects.toThrow('refused on purpose');
  });

  it('names a request the worker does not serve', async () => {
    const w = fakeWorker();
    serve<Pick<Demo, 'double'>>({ double: ({ n }) => n });
    const rpc = new Rpc<Demo>(w);
    await expect(rpc.call('fail', {})).rejects.toThrow('unknown request fail');
  });

  it('refuses, at compile time, a request or arguments the map does not list', () => {
    // Never run: typecheck (tsc --noEmit over tests/) fails if a line below compiles.
    const typed = (rpc: Rpc<Demo>) => {
      // @ts-expect-error not a request of Demo
      void rpc.call('triple', { n: 1 });
      // @ts-expect-error the arguments of `double` are { n: number }
      void rpc.call('double', { m: 1 });
      // @ts-expect-error the answer of `double` is a number
      const s: Promise<string> = rpc.call('double', { n: 1 });
      // @ts-expect-error a handler must answer with the request's result type
      serve<Demo>({ double: () => 'two', fail: () => Promise.reject(new Error('x')) });
      return s;
    };
    expect(typeof typed).toBe('function');
  });
});
