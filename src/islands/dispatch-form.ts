/**
 * The dispatch visualizer's settings as the scene takes them: the options a
 * mount starts from (each refused value named), what the Settings form says
 * (each wrong field named), a preset written into the form, and the settings
 * "Embed this" writes back as attributes. Built by dispatch-dom.ts; read here.
 */
import type { Program, Proto } from '../model/index';
import { parseClients } from '../scene/dispatch/clients';
import { bootSecret, hex32, parseHex32 } from '../scene/dispatch/rng';
import type { SimOptions } from '../scene/dispatch/sim';
import { formatRates } from '../scene/dispatch/workers';
import type { DispatchDom } from './dispatch-dom';
import { LIMITS, PRESET_BASE, type DispatchOptions, type Preset, type Refused } from './dispatch-options';
import type { DispatchText } from './dispatch-text';

/** The scene's options a mount starts from, and the settings refused on the way (a kernel the model has no profile for). */
export function startOptions(options: DispatchOptions & { refused?: Refused[] }, kernels: readonly string[]): { opts: SimOptions; refused: Refused[] } {
  const refused = [...(options.refused ?? [])];
  let kernel = options.kernel;
  if (kernel !== undefined && !kernels.includes(kernel)) {
    refused.push({ name: 'kernel', value: kernel, rule: 'one-of', allowed: [...kernels] });
    kernel = undefined;
  }
  const seed0 = (options.seed ?? 1) >>> 0;
  const opts: SimOptions = {
    kernel: kernel ?? '6.18',
    proto: options.proto ?? 'tcp',
    listeners: Math.min(LIMITS.listeners, options.listeners ?? 8),
    wildcard: options.wildcard ?? false,
    seed: seed0,
    secret: (options.secret ?? bootSecret(seed0, 0)) >>> 0,
    clients: Math.min(LIMITS.clients, options.clients ?? 200),
    rate: Math.min(LIMITS.rate, options.rate ?? 40),
    cpus: options.cpus ?? 4,
    program: null,
    clientList: null,
    rates: (options.rates ?? []).slice(0, LIMITS.listeners),
  };
  return { opts, refused };
}

/** What the Settings form says, as the scene's options on top of `base`; or the first wrong field, in words. */
export function readSettings(d: DispatchDom, t: DispatchText, base: SimOptions): { options: SimOptions } | { error: string } {
  const { rateIn, listenersIn, clientsIn, cpusIn, seedIn, secretIn, progSel, progIdx, progMod, clientList, kernelSel, protoSel, bindSel } = d;
  let error: string | undefined;
  const num = (input: typeof rateIn, lo: number, hi: number, name: string): number | undefined => {
    const v = Number(input.property('value'));
    if (!Number.isInteger(v) || v < lo || v > hi) {
      error = t.wholeNumber(name, lo, hi);
      return undefined;
    }
    return v;
  };
  const listeners = num(listenersIn, 1, LIMITS.listeners, t.listeners);
  const clients = num(clientsIn, 1, LIMITS.clients, t.clients);
  const cpus = num(cpusIn, 1, 64, t.cpus);
  const seed = num(seedIn, 0, 4294967295, t.seed);
  const rate = num(rateIn, 1, LIMITS.rate, t.rate);
  const secret = parseHex32(String(secretIn.property('value')));
  if (listeners === undefined || clients === undefined || cpus === undefined || seed === undefined || rate === undefined) return { error: error! };
  if (secret === undefined) return { error: t.secretBad };
  const prog = String(progSel.property('value'));
  let program: Program | null = null;
  if (prog === 'cpu') program = { kind: 'cpu' };
  if (prog === 'index') {
    const idx = num(progIdx, 0, 65535, t.fixedIndexName);
    if (idx === undefined) return { error: error! };
    program = { kind: 'index', index: idx };
  }
  if (prog === 'payload_mod') {
    const m = num(progMod, 1, 4294967295, t.payloadModulusName);
    if (m === undefined) return { error: error! };
    program = { kind: 'payload_mod', modulus: m };
  }
  if (prog === 'pass') program = { kind: 'pass' };
  if (prog === 'drop') program = { kind: 'drop' };
  let clientListParsed = null;
  const text = String(clientList.property('value'));
  if (text.trim()) {
    const r = parseClients(text, cpus, seed, LIMITS.clients);
    if (r.tooMany) return { error: t.tooManyClients(r.tooMany.line, r.tooMany.max) };
    if (r.errors.length) return { error: t.clientListErrors(r.errors.slice(0, 5)) };
    if (!r.clients.length) return { error: t.noClient };
    clientListParsed = r.clients;
  }
  return {
    options: {
      ...base,
      kernel: String(kernelSel.property('value')),
      proto: protoSel.property('value') as Proto,
      wildcard: bindSel.property('value') === 'wildcard',
      listeners,
      clients,
      cpus,
      seed,
      secret,
      rate,
      program,
      clientList: clientListParsed,
    },
  };
}

/** Writes a preset's settings into the form (the client list emptied), for a restart to read. */
export function fillPreset(d: DispatchDom, p: Preset): void {
  const o = { ...PRESET_BASE, ...p.options };
  d.kernelSel.property('value', o.kernel);
  d.protoSel.property('value', o.proto);
  d.bindSel.property('value', o.wildcard ? 'wildcard' : 'specific');
  d.listenersIn.property('value', String(o.listeners));
  d.clientsIn.property('value', String(o.clients));
  d.rateIn.property('value', String(o.rate));
  d.cpusIn.property('value', String(o.cpus));
  d.progSel.property('value', o.program);
  d.showProgramFields();
  d.clientList.property('value', '');
}

/** The group as it is set now, as `<reuseport-dispatch>` attributes ("Embed this"; a program and a client list have none). */
export function embedSettings(o: SimOptions, speed: number, options: DispatchOptions): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {
    kernel: o.kernel,
    proto: o.proto,
    listeners: String(o.listeners),
    clients: String(o.clients),
    rate: String(o.rate),
    speed: String(speed),
    seed: String(o.seed),
    secret: hex32(o.secret),
    cpus: String(o.cpus),
    wildcard: o.wildcard,
  };
  const rates = formatRates(o.rates ?? []);
  if (rates) out.rates = rates;
  if (options.compact) out.compact = true;
  if (options.autoplay === false) out.autoplay = 'false';
  return out;
}
