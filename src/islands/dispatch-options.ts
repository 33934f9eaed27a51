/**
 * The dispatch visualizer's settings: its options, their bounds, the presets,
 * and reading them from attributes or the page URL (each bad value refused by
 * name, with the rule it broke).
 */
import type { Proto } from '../model/index';
import type { DispatchText, PresetId } from './dispatch-text';
import type { LookupScene } from '../scene/dispatch/lookup';
import { parseHex32 } from '../scene/dispatch/rng';
import { parseRates, RATE_BOUNDS } from '../scene/dispatch/workers';

/** A file name of the site's traces/ (no path): what the `replay` setting takes. */
export const TRACE_FILE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.json$/;

export interface DispatchOptions {
  /** Kernel profile (one of `profiles()`, e.g. "6.18"). @default "6.18" */
  kernel?: string;
  /** @default "tcp" */
  proto?: Proto;
  /** Members joined at start (1 to 1024). @default 8 */
  listeners?: number;
  /** Generated clients (1 to 5000). @default 200 */
  clients?: number;
  /** New connections (or datagrams) per simulated second. @default 40 */
  rate?: number;
  /** Simulated seconds per wall-clock second. @default 1 */
  speed?: number;
  /** Seed of clients, arrivals and boots (unsigned 32-bit). @default 1 */
  seed?: number;
  /** The IPv4 hash key (`secret + net_hash_mix`), 32-bit. @default the seed's first boot */
  secret?: number;
  /** Bind 0.0.0.0 instead of the server address 10.0.0.1. @default false */
  wildcard?: boolean;
  /** Receiving CPUs the clients' flows are spread over (1 to 64). @default 4 */
  cpus?: number;
  /** Start playing (ignored with prefers-reduced-motion, which starts paused and plays in 1 s steps). @default true */
  autoplay?: boolean;
  /** Only the scene and the play control (for a front page or a small embed). @default false */
  compact?: boolean;
  /** Events kept in the event list. @default 20000 */
  logMax?: number;
  /**
   * Each worker's service rate as a multiple of the normal one (entry i for
   * listener i, from 0.1 to 4); workers past the list keep 1. The normal rate
   * accepts 1.2 times the worker's fair share of arrivals. @default []
   */
  rates?: number[];
  /**
   * A trace of the site's traces/ to replay ("your server, replayed"): its file name, such as
   * `tcp-v4-specific-8.json`. The model hashes with `secret` when given, else with the key the
   * traces' manifest names for it. @default none
   */
  replay?: string;
}

/** The playback speeds offered (simulated seconds per wall-clock second). */
export const SPEEDS = [0.1, 0.25, 0.5, 1, 2, 4];
/**
 * The controls' ranges. Every setting they allow keeps the scene at 60 frames
 * a second on a two-core machine without a GPU (npm run bench:frames measures
 * the maxima): the arrival rate was 5000/s, at which each frame asked the
 * model about more connections than a frame has time for.
 */
export const LIMITS = { listeners: 1024, clients: 5000, rate: 2000 } as const;
/** Moved flows listed under the scene (all of them are ringed in it). */

export interface Preset {
  id: PresetId;
  options: Partial<typeof PRESET_BASE>;
  /** A listener closed right after the restart. */
  close?: number;
  /** Opens the Listener lookup panel on this layout. */
  lookup?: LookupScene;
}
export const PRESET_BASE = { kernel: '6.18', proto: 'tcp' as Proto, wildcard: false, listeners: 8, clients: 200, rate: 40, cpus: 4, program: 'none' };
/** Presets named after what they teach. */
export const PRESETS: Preset[] = [
  { id: 'workers', options: {} },
  { id: 'closeOne', options: {}, close: 3 },
  { id: 'fewClients', options: { clients: 12, rate: 6 } },
  { id: 'many', options: { listeners: 130, clients: 2000, rate: 400 } },
  { id: 'wildcard', options: { wildcard: true }, lookup: 'addr_any' },
  { id: 'reservoir', options: { kernel: '3.9', listeners: 4, clients: 24, rate: 12 } },
  { id: 'bpfCpu', options: { program: 'cpu', listeners: 4 } },
];
/** Milliseconds the focused packet takes to travel its route when stepping. */

export type Refused = { name: string; value: string } & (
  | { rule: 'int'; lo: number; hi: number }
  | { rule: 'one-of'; allowed: string[] }
  | { rule: 'hex32' }
  | { rule: 'rates'; lo: number; hi: number; max: number; entry: number; bad: string }
  | { rule: 'file' }
);

/** A refused setting in words: what was given and what the control takes. */
export function refusedText(t: DispatchText, r: Refused): string {
  const given = `${r.name}=${r.value.length > 32 ? `${r.value.slice(0, 32)}…` : r.value}`;
  if (r.rule === 'int') return t.wholeNumber(given, r.lo, r.hi);
  if (r.rule === 'hex32') return `${given}: ${t.secretBad}`;
  if (r.rule === 'rates') return t.ratesBad(given, r.lo, r.hi, r.max, r.entry, r.bad);
  if (r.rule === 'file') return t.replayFileBad(given);
  return t.badSetting(given, r.allowed.length > 8 ? `${r.allowed.slice(0, 8).join(', ')}, …` : r.allowed.join(', '));
}

/**
 * Options from attributes, then (with the `from-url` attribute) from the page
 * URL's query. Every value is checked by the rule of its form control; a bad
 * one is left out (its default stands) and listed in `refused`, so the widget
 * names it instead of freezing on `rate=1e9` or drawing nothing on `listeners=-1`.
 */
export function readDispatch(el: HTMLElement): DispatchOptions & { refused: Refused[] } {
  const q = el.hasAttribute('from-url') ? new URLSearchParams(location.search) : new URLSearchParams();
  const get = (name: string): string | null => q.get(name) ?? el.getAttribute(name);
  const refused: Refused[] = [];
  const refuse = (r: Refused): undefined => {
    refused.push(r);
    return undefined;
  };
  const int = (name: string, lo: number, hi: number): number | undefined => {
    const v = get(name);
    if (v === null) return undefined;
    const n = /^\s*\d{1,10}\s*$/.test(v) ? Number(v) : NaN;
    if (Number.isInteger(n) && n >= lo && n <= hi) return n;
    refused.push({ name, value: v, rule: 'int', lo, hi });
    return undefined;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[]): T | undefined => {
    const v = get(name);
    if (v === null) return undefined;
    if ((allowed as readonly string[]).includes(v)) return v as T;
    refused.push({ name, value: v, rule: 'one-of', allowed: [...allowed] });
    return undefined;
  };
  const secretText = get('secret');
  const secret = secretText === null ? undefined : parseHex32(secretText);
  if (secretText !== null && secret === undefined) refused.push({ name: 'secret', value: secretText, rule: 'hex32' });
  const speed = get('speed');
  const replayText = get('replay');
  const replay = replayText === null ? undefined : TRACE_FILE.test(replayText) ? replayText : refuse({ name: 'replay', value: replayText, rule: 'file' });
  const bind = oneOf('bind', ['specific', 'wildcard']);
  const ratesText = get('rates');
  let rates: number[] | undefined;
  if (ratesText !== null) {
    const r = parseRates(ratesText, LIMITS.listeners);
    if ('rates' in r) rates = r.rates;
    else
      refused.push({
        name: 'rates',
        value: ratesText,
        rule: 'rates',
        lo: RATE_BOUNDS.lo,
        hi: RATE_BOUNDS.hi,
        max: LIMITS.listeners,
        entry: r.error.entry,
        bad: r.error.value,
      });
  }
  return {
    // The kernel is checked against the model's profiles when it has loaded (mount).
    kernel: get('kernel') ?? undefined,
    proto: oneOf('proto', ['tcp', 'udp']),
    listeners: int('listeners', 1, LIMITS.listeners),
    clients: int('clients', 1, LIMITS.clients),
    rate: int('rate', 1, LIMITS.rate),
    speed:
      speed === null
        ? undefined
        : SPEEDS.includes(Number(speed))
          ? Number(speed)
          : refuse({ name: 'speed', value: speed, rule: 'one-of', allowed: SPEEDS.map(String) }),
    seed: int('seed', 0, 4294967295),
    secret,
    wildcard: el.hasAttribute('wildcard') || bind === 'wildcard',
    cpus: int('cpus', 1, 64),
    autoplay: oneOf('autoplay', ['true', 'false']) !== 'false',
    compact: el.hasAttribute('compact'),
    rates,
    replay,
    refused,
  };
}
