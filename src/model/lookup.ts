/**
 * The full listener lookup (several sockets, the bind rules, the tables and
 * scores), from the larger wasm package `pkg-lookup`, loaded only by the
 * pages that need it. Same rules as the core package: both are built from
 * the one Rust crate.
 */
import init, { Host as WasmHost, initSync } from './pkg-lookup/reuseport.js';
import type { CallLog } from './calls';
import { Host as CoreHost } from './index';
import { wasmLoader } from './load';
import type { CallResult } from './generated/CallResult';
import type { Layout } from './generated/Layout';
import type { LookupExplain } from './generated/LookupExplain';
import type { LookupRules } from './generated/LookupRules';
import type { Packet } from './generated/Packet';

export type { AfterBind, CallLog, Call, CallName, SockOpt, SocketSetup } from './calls';
export { callLog, fdOfCalls, lastCall, placeFor, setupAll, setupCalls, socketCount, withoutSocket } from './calls';
/** `Layout` is the earlier layout form, which the model still reads and converts to calls. */
export type { CallResult, Layout, LookupExplain, LookupRules, Packet };

const big = wasmLoader({ init, initSync });

/** Loads the lookup package once (browser). */
export const loadLookup: () => Promise<void> = big.load;

/** Loads the lookup package from bytes (Node, tests). */
export const loadLookupSync: (bytes: BufferSource) => void = big.loadSync;

/** Several sockets on one host after their calls: the model's Host (as in the core package), in this package. */
export class Host extends CoreHost {
  constructor(kernel: string, layout: CallLog | Layout) {
    super(kernel, layout, WasmHost);
  }
}
