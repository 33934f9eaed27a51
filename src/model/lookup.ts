/**
 * The full listener lookup (several sockets, the bind rules, the tables and
 * scores), from the larger wasm package `pkg-lookup`, loaded only by the
 * pages that need it. Same rules as the core package: both are built from
 * the one Rust crate.
 */
import init, { Host as WasmHost, initSync } from './pkg-lookup/reuseport.js';
import type { CallLog } from './calls';
import { wasmLoader } from './load';
import type { CallResult } from './generated/CallResult';
import type { Layout } from './generated/Layout';
import type { LookupExplain } from './generated/LookupExplain';
import type { LookupRules } from './generated/LookupRules';
import type { Packet } from './generated/Packet';
import type { Refusal } from './generated/message/Refusal';

export type { AfterBind, CallLog, Call, CallName, SockOpt, SocketSetup } from './calls';
export { callLog, fdOfCalls, lastCall, placeFor, setupAll, setupCalls, socketCount, withoutSocket } from './calls';
/** `Layout` is the earlier layout form, which the model still reads and converts to calls. */
export type { CallResult, Layout, LookupExplain, LookupRules, Packet };

const big = wasmLoader({ init, initSync });

/** Loads the lookup package once (browser). */
export const loadLookup: () => Promise<void> = big.load;

/** Loads the lookup package from bytes (Node, tests). */
export const loadLookupSync: (bytes: BufferSource) => void = big.loadSync;

/** Several sockets on one host after their calls. */
export class Host {
  #inner: WasmHost;

  /** Replays the call log (or the earlier form, converted); throws naming the call and field at fault. */
  constructor(kernel: string, layout: CallLog | Layout) {
    this.#inner = new WasmHost({ kernel, layout });
  }

  /** The call log replayed: the one given, or the calls an earlier-form layout stood for, as the model converted it. */
  calls(): CallLog {
    return this.#inner.calls();
  }

  /** Each call's answer, in call order: null for ok. */
  answers(): (Refusal | null)[] {
    return this.#inner.answers();
  }

  /** Each socket's last bind()/listen()/attach answer and where it ended up. */
  results(): CallResult[] {
    return this.#inner.results();
  }

  /** The lookup rules of the profile. */
  rules(): LookupRules {
    return this.#inner.rules();
  }

  /** Tables walked, candidates and scores, the group's pick, the receiving socket. */
  lookup(packet: Packet): LookupExplain {
    return this.#inner.lookup(packet);
  }

  dispose(): void {
    this.#inner.free();
  }
}
