/**
 * The bind checker's call log as given: read through the model (an
 * earlier-form layout converted to calls), held to the checker's bounds,
 * and, when the model refuses to replay it, kept as given if every entry
 * can be drawn as a row. No DOM here, so Vitest reads it with the model.
 */
import { Host, callLog, setupAll, socketCount, type Call, type CallLog, type Layout, type SocketSetup } from '../model/lookup';

/** At most this many sockets, so every edit answers at once. */
export const MAX_SOCKETS = 32;
/** At most this many calls. */
export const MAX_CALLS = 256;

/** A socket the "Add a socket" button sets up. */
export const NEW_SOCKET: SocketSetup = { family: 'inet', proto: 'tcp', addr: '0.0.0.0', port: 8080, reuseport: true };

/** The log shown when none is given, or when the one given cannot be shown. */
export const DEFAULT: CallLog = callLog(setupAll([NEW_SOCKET, NEW_SOCKET]));

/** The checker's sentences for a layout it does not show (per language, from the widget's words). */
export interface LogWords {
  notCalls: string;
  tooManyCalls: (n: number) => string;
  tooManySockets: (n: number) => string;
}

/** The keys of a socket option (`SockOpt`), one of which a `setsockopt` call's `opt` holds. */
const OPTION_KEYS = ['reuseaddr', 'reuseport', 'v6only', 'bindtodevice', 'incomingCpu', 'linger', 'attachReuseport'] as const;

/** What the checker needs of a call to show it as a row (the model checks the rest). */
function showable(c: unknown): c is Call {
  if (typeof c !== 'object' || c === null) return false;
  const o = c as Record<string, unknown>;
  if (o.call === 'socket') return typeof o.family === 'string' && typeof o.proto === 'string';
  if (!Number.isInteger(o.fd)) return false;
  if (o.call === 'setsockopt') {
    const opt = o.opt as Record<string, unknown> | null;
    return typeof opt === 'object' && opt !== null && OPTION_KEYS.some((k) => k in opt);
  }
  if (o.call === 'bind' || o.call === 'connect') return typeof o.addr === 'string' && typeof o.port === 'number';
  return o.call === 'listen' || o.call === 'shutdown' || o.call === 'close';
}

/**
 * The calls of `given` as the model reads them (an earlier-form layout
 * converted), or the default with the reason `given` is not shown: the
 * model's, or a bound passed ({@link MAX_CALLS}, {@link MAX_SOCKETS}).
 * A call log the model refuses to replay is still shown as given (each
 * redraw says why) when every entry is a call the checker can show.
 */
export function readLog(kernel: string, given: CallLog | Layout, w: LogWords): { log: CallLog; error?: string } {
  let log: CallLog;
  try {
    const host = new Host(kernel, given);
    try {
      log = host.calls();
    } finally {
      host.dispose();
    }
  } catch (e) {
    const calls: unknown = (given as Partial<CallLog> | null)?.calls;
    const why = e instanceof Error ? e.message : String(e);
    if (!Array.isArray(calls)) return { log: structuredClone(DEFAULT), error: why };
    if (!calls.every(showable)) return { log: structuredClone(DEFAULT), error: `${w.notCalls}; ${why}` };
    log = structuredClone(given as CallLog);
  }
  if (log.calls.length > MAX_CALLS) return { log: structuredClone(DEFAULT), error: w.tooManyCalls(log.calls.length) };
  const sockets = socketCount(log.calls);
  if (sockets > MAX_SOCKETS) return { log: structuredClone(DEFAULT), error: w.tooManySockets(sockets) };
  return { log };
}
