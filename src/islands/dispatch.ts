/**
 * The dispatch visualizer: clients send SYNs (or UDP datagrams) to one
 * SO_REUSEPORT group; each packet travels the path the model reports (hash
 * on the 32-bit range cut into N bands, the slot of socks[], the listener's
 * accept queue). Play, pause, step through the event list, change the
 * group, and inspect any packet's whole explain record.
 *
 * `mount(el, options)` returns `dispose`; `<reuseport-dispatch>` is the same
 * widget as a custom element (attributes as in {@link DispatchOptions},
 * kebab-case).
 */
import { select } from 'd3';
import { FrameClock } from '../clock';
import { defineIsland, emit, hostOf, islandElement, provideSettings } from './element';
import { loadModel, NO_LISTENER, profiles, type Program, type Proto } from '../model/index';
import { pageLang } from './site';
import { renderExplain } from '../render/explain-card';
import { Chart, fmtRatio } from '../render/dispatch/chart';
import { Overlay, type Marker } from '../render/dispatch/overlay';
import { drawPackets, drawRoute, hitTest, Pixels, pixelWord, px, py, stampClients, stampMoved, stampPackets, type Box } from '../render/dispatch/particles';
import { explainView } from '../scene/explain-view';
import { firstLinePast, parseClients } from '../scene/dispatch/clients';
import type { DispatchEvent } from '../scene/dispatch/events';
import { along, COL, hashToY } from '../scene/dispatch/layout';
import { KIND_SHAPE, KINDS, listenerMark } from '../scene/dispatch/palette';
import { bootSecret, hex32, parseHex32 } from '../scene/dispatch/rng';
import { DispatchSim, KIND_OF_CODE, newFrame, type SimOptions } from '../scene/dispatch/sim';
import { fairness } from '../scene/dispatch/stats';
import { markerText, structure, type RowView, type Structure } from '../scene/dispatch/structure';
import { addrAnyPlan, groupPlan, hostPacket, lookupView, type HostPlan, type LookupScene, type LookupView } from '../scene/dispatch/lookup';
import { renderLookup } from '../render/dispatch/lookup';
import { dispatchText, nowView, tourFacts, type PresetId } from './dispatch-text';
import { formatRates, parseRates, RATE_BOUNDS } from '../scene/dispatch/workers';
import { queueBarMax, ROW_PARTS, TOUR_STEP_IDS, tourSpot, type TourStep } from '../scene/dispatch/tour';

type LookupModule = typeof import('../model/lookup');

/** Options of the dispatch visualizer. */
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
}

let uid = 0;
const SPEEDS = [0.1, 0.25, 0.5, 1, 2, 4];
/**
 * The controls' ranges. Every setting they allow keeps the scene at 60 frames
 * a second on a two-core machine without a GPU (npm run bench:frames measures
 * the maxima): the arrival rate was 5000/s, at which each frame asked the
 * model about more connections than a frame has time for.
 */
export const LIMITS = { listeners: 1024, clients: 5000, rate: 2000 } as const;
/** Moved flows listed under the scene (all of them are ringed in it). */
const MOVED_LIST = 100;
/** Workers listed in the workers table in slot order (stalled and slowed ones are always listed too). */
const WORKER_ROWS = 64;
/** How far from a packet (CSS pixels) a click still picks it. */
const HIT_RADIUS = 12;

// biome-ignore lint/suspicious/noExplicitAny: d3's Selection is generic in element and data; this helper serves any
type Sel = import('d3').Selection<any, unknown, null, undefined>;

/** What a preset sets (the rest as {@link PRESET_BASE}). */
interface Preset {
  id: PresetId;
  options: Partial<typeof PRESET_BASE>;
  /** A listener closed right after the restart. */
  close?: number;
  /** Opens the Listener lookup panel on this layout. */
  lookup?: LookupScene;
}
const PRESET_BASE = { kernel: '6.18', proto: 'tcp' as Proto, wildcard: false, listeners: 8, clients: 200, rate: 40, cpus: 4, program: 'none' };
/** Presets named after what they teach. */
const PRESETS: Preset[] = [
  { id: 'workers', options: {} },
  { id: 'closeOne', options: {}, close: 3 },
  { id: 'fewClients', options: { clients: 12, rate: 6 } },
  { id: 'many', options: { listeners: 130, clients: 2000, rate: 400 } },
  { id: 'wildcard', options: { wildcard: true }, lookup: 'addr_any' },
  { id: 'reservoir', options: { kernel: '3.9', listeners: 4, clients: 24, rate: 12 } },
  { id: 'bpfCpu', options: { program: 'cpu', listeners: 4 } },
];
/** Milliseconds the focused packet takes to travel its route when stepping. */
const FOCUS_MS = 900;

/** Mounts the visualizer into `el`; resolves to a function removing it (frames, observers, listeners). */
export async function mount(el: HTMLElement, options: DispatchOptions & { refused?: Refused[] } = {}): Promise<() => void> {
  await loadModel();
  const lang = pageLang(el);
  const t = dispatchText(lang);
  const refused = [...(options.refused ?? [])];
  const kernels = profiles().map((p) => `${p.release.major}.${p.release.minor}`);
  if (options.kernel !== undefined && !kernels.includes(options.kernel)) {
    refused.push({ name: 'kernel', value: options.kernel, rule: 'one-of', allowed: kernels });
    options = { ...options, kernel: undefined };
  }
  const seq = ++uid;
  const id = `rl-dv-${seq}`;
  const f = (n: string) => `${id}-${n}`;
  const reduced = typeof matchMedia === 'function' && matchMedia('(prefers-reduced-motion: reduce)').matches;
  const seed0 = (options.seed ?? 1) >>> 0;
  const opts: SimOptions = {
    kernel: options.kernel ?? '6.18',
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
  let speed = options.speed ?? 1;
  const sim = new DispatchSim(opts, options.logMax ?? 20000);

  const root = select(el)
    .append('div')
    .attr('class', options.compact ? 'rl-dv rl-dv-compact' : 'rl-dv');
  const cleanups: (() => void)[] = [];
  const on = <K extends keyof HTMLElementEventMap>(node: HTMLElement, type: K, fn: (ev: HTMLElementEventMap[K]) => void) => {
    node.addEventListener(type, fn as EventListener);
    cleanups.push(() => node.removeEventListener(type, fn as EventListener));
  };

  // ---- First screen: playback, one sentence, the scene ------------------------------------------
  const field = (parent: Sel, name: string, label: string, hint?: string) => {
    const w = parent.append('div').attr('class', 'rl-field');
    w.append('label').attr('for', f(name)).text(label);
    if (hint)
      w.append('span')
        .attr('class', 'rl-dv-hint')
        .attr('id', f(`${name}-hint`))
        .text(hint);
    return w;
  };
  const bar = root.append('div').attr('class', 'rl-dv-bar').attr('role', 'group').attr('aria-label', t.controls(seq));
  const playBtn = bar.append('button').attr('type', 'button').attr('class', 'rl-primary').attr('aria-pressed', 'false').text(t.play);
  const backBtn = bar.append('button').attr('type', 'button').text(t.stepBack);
  const fwdBtn = bar.append('button').attr('type', 'button').text(t.stepForward);
  const speedWrap = bar.append('div').attr('class', 'rl-dv-inline');
  speedWrap.append('label').attr('for', f('speed')).text(t.speed);
  const speedSel = speedWrap.append('select').attr('id', f('speed'));
  speedSel
    .selectAll('option')
    .data(SPEEDS)
    .join('option')
    .attr('value', (d) => String(d))
    .text((d) => `${d}×`);
  speedSel.property('value', String(SPEEDS.includes(speed) ? speed : 1));
  speed = Number(speedSel.property('value'));
  const tourBtn = bar
    .append('button')
    .attr('type', 'button')
    .attr('class', 'rl-dv-tour-btn')
    .attr('aria-controls', f('tour'))
    .attr('aria-expanded', 'false')
    .text(t.tour);
  const settingsBtn = bar
    .append('button')
    .attr('type', 'button')
    .attr('class', 'rl-dv-settings-btn')
    .attr('aria-expanded', 'false')
    .attr('aria-controls', f('settings'))
    .text(t.settings);
  const now = root.append('p').attr('class', 'rl-dv-now').attr('aria-live', 'polite').attr('id', f('now'));
  // What the last add or close did to the flows, under the sentence (the moved clients are ringed in the scene).
  const remapLine = root.append('p').attr('class', 'rl-dv-remap').attr('aria-live', 'polite');
  // The guided tour: in the flow above the scene while open, gone (hidden) when closed, so closing leaves the layout as it was.
  const tourBox = root.append('section').attr('class', 'rl-dv-tour').attr('id', f('tour')).attr('hidden', '').attr('aria-labelledby', f('tour-h'));
  const tourHead = tourBox.append('div').attr('class', 'rl-dv-tour-head');
  tourHead.append('h2').attr('id', f('tour-h')).text(t.tourTitle);
  const tourCount = tourHead.append('span').attr('class', 'rl-dv-tour-count');
  const tourText = tourBox.append('div').attr('class', 'rl-dv-tour-text').attr('tabindex', '-1').attr('aria-live', 'polite').attr('id', f('tour-text'));
  const tourNav = tourBox.append('div').attr('class', 'rl-dv-tour-nav');
  const tourBack = tourNav.append('button').attr('type', 'button').text(t.tourBack);
  const tourNext = tourNav.append('button').attr('type', 'button').attr('class', 'rl-primary').text(t.tourNext);
  const tourClose = tourNav.append('button').attr('type', 'button').attr('class', 'rl-dv-tour-close').text(t.tourClose);

  const layout = root.append('div').attr('class', 'rl-dv-layout');
  const stage = layout.append('div').attr('class', 'rl-dv-stage').attr('role', 'group').attr('aria-label', t.stage);
  const canvas = stage.append('canvas').attr('class', 'rl-dv-canvas').attr('aria-hidden', 'true');
  const overlay = new Overlay(stage.node()!);
  // The focused packet's numbers (and its listener lookup when that panel is open), in words under the scene.
  const stageLine = stage.append('p').attr('class', 'rl-dv-stage-line');
  const stageLookup = stage.append('p').attr('class', 'rl-dv-stage-lookup');
  // A stall toggle beside each listener (when the rows have room for one), and the tour's highlight, over the scene.
  const stalls = stage.append('div').attr('class', 'rl-dv-stalls');
  const spot = stage.append('div').attr('class', 'rl-dv-spot').attr('hidden', '').attr('aria-hidden', 'true');
  const legend = stage.append('ul').attr('class', 'rl-dv-legend').attr('aria-label', t.shapes);
  legend
    .selectAll('li')
    .data([...KINDS.map((k) => `${{ square: '■', diamond: '◆', bar: '▬', cross: '✕', triangle: '▲' }[KIND_SHAPE[k]]} ${k}`), t.colourLegend, t.keyboardPath])
    .join('li')
    .text((d) => d);

  // ---- Settings (opened on demand) ---------------------------------------------------------------
  const side = layout.append('div').attr('class', 'rl-dv-side');
  const settings = side
    .append('div')
    .attr('class', 'rl-dv-settings')
    .attr('id', f('settings'))
    .attr('hidden', '')
    .attr('role', 'region')
    .attr('aria-label', t.settings);
  const form = settings.append('form').attr('class', 'rl-dv-controls').attr('novalidate', '');
  on(form.node()!, 'submit', (e) => e.preventDefault());
  const errors = form.append('div').attr('class', 'rl-errors').attr('role', 'alert');
  const presetFs = form.append('fieldset').attr('class', 'rl-dv-fs rl-dv-presets');
  presetFs.append('legend').text(t.presetsLegend);
  const presetBtns = presetFs
    .selectAll('button')
    .data(PRESETS)
    .join('button')
    .attr('type', 'button')
    .attr('data-preset', (d) => d.id)
    .text((d) => t.presets[d.id]);

  // Live changes first: they are what a reader tries while watching the scene.
  const liveFs = form.append('fieldset').attr('class', 'rl-dv-fs');
  liveFs.append('legend').text(t.liveLegend);
  const closeSel = field(liveFs, 'close', t.listener).append('select').attr('id', f('close'));
  const closeBtn = liveFs.append('button').attr('type', 'button').text(t.closeListener);
  const addBtn = liveFs.append('button').attr('type', 'button').text(t.addListener);
  const cpuIn = field(liveFs, 'pin', 'SO_INCOMING_CPU').append('input').attr('id', f('pin')).attr('type', 'number').attr('min', 0).property('value', '0');
  const pinBtn = liveFs.append('button').attr('type', 'button').text(t.setCpu);
  const unpinBtn = liveFs.append('button').attr('type', 'button').text(t.clearCpu);
  const rateField = field(liveFs, 'srate', t.serviceRate, t.serviceRateHint);
  const srateIn = rateField
    .append('input')
    .attr('id', f('srate'))
    .attr('type', 'number')
    .attr('min', RATE_BOUNDS.lo)
    .attr('max', RATE_BOUNDS.hi)
    .attr('step', 0.1)
    .attr('aria-describedby', f('srate-hint'))
    .property('value', '1');
  const setRateBtn = liveFs.append('button').attr('type', 'button').text(t.setRate);
  const stallSetBtn = liveFs.append('button').attr('type', 'button').attr('aria-pressed', 'false').text(t.stallToggle);
  const secretIn = field(liveFs, 'secret', t.secret).append('input').attr('id', f('secret')).attr('spellcheck', 'false').property('value', hex32(opts.secret));
  const setSecretBtn = liveFs.append('button').attr('type', 'button').text(t.setSecret);
  const bootBtn = liveFs.append('button').attr('type', 'button').text(t.newBoot);

  const groupFs = form.append('fieldset').attr('class', 'rl-dv-fs');
  groupFs.append('legend').text(t.groupLegend);
  const kernelSel = field(groupFs, 'kernel', t.kernel).append('select').attr('id', f('kernel'));
  kernelSel
    .selectAll('option')
    .data(profiles().map((p) => `${p.release.major}.${p.release.minor}`))
    .join('option')
    .attr('value', (d) => d)
    .text((d) => d);
  kernelSel.property('value', opts.kernel);
  const protoSel = field(groupFs, 'proto', t.proto).append('select').attr('id', f('proto'));
  protoSel
    .selectAll('option')
    .data(['tcp', 'udp'])
    .join('option')
    .attr('value', (d) => d)
    .text((d) => d.toUpperCase());
  protoSel.property('value', opts.proto);
  const bindSel = field(groupFs, 'bind', t.bound).append('select').attr('id', f('bind'));
  bindSel
    .selectAll('option')
    .data([
      ['specific', t.bindOptions[0]],
      ['wildcard', t.bindOptions[1]],
    ])
    .join('option')
    .attr('value', (d) => d[0]!)
    .text((d) => d[1]!);
  bindSel.property('value', opts.wildcard ? 'wildcard' : 'specific');
  const listenersIn = field(groupFs, 'listeners', t.listeners)
    .append('input')
    .attr('id', f('listeners'))
    .attr('type', 'number')
    .attr('min', 1)
    .attr('max', LIMITS.listeners)
    .property('value', String(opts.listeners));
  const clientsIn = field(groupFs, 'clients', t.clients)
    .append('input')
    .attr('id', f('clients'))
    .attr('type', 'number')
    .attr('min', 1)
    .attr('max', LIMITS.clients)
    .property('value', String(opts.clients));
  const rateIn = field(groupFs, 'rate', t.rate, t.rateHint(LIMITS.rate))
    .append('input')
    .attr('id', f('rate'))
    .attr('type', 'number')
    .attr('min', 1)
    .attr('max', LIMITS.rate)
    .attr('aria-describedby', f('rate-hint'))
    .property('value', String(opts.rate));
  const cpusIn = field(groupFs, 'cpus', t.cpus)
    .append('input')
    .attr('id', f('cpus'))
    .attr('type', 'number')
    .attr('min', 1)
    .attr('max', 64)
    .property('value', String(opts.cpus));
  const progSel = field(groupFs, 'program', t.program).append('select').attr('id', f('program'));
  progSel
    .selectAll('option')
    .data([
      ['none', t.programOptions[0]],
      ['cpu', t.programOptions[1]],
      ['index', t.programOptions[2]],
      ['payload_mod', t.programOptions[3]],
      ['pass', t.programOptions[4]],
      ['drop', t.programOptions[5]],
    ])
    .join('option')
    .attr('value', (d) => d[0]!)
    .text((d) => d[1]!);
  const progIdxField = field(groupFs, 'progidx', t.fixedIndex).attr('hidden', '');
  const progIdx = progIdxField.append('input').attr('id', f('progidx')).attr('type', 'number').attr('min', 0).property('value', '99');
  const progModField = field(groupFs, 'progmod', t.payloadModulus).attr('hidden', '');
  const progMod = progModField.append('input').attr('id', f('progmod')).attr('type', 'number').attr('min', 1).property('value', '3');
  // A program's own setting shows only with that program.
  const showProgramFields = () => {
    const p = String(progSel.property('value'));
    progIdxField.property('hidden', p !== 'index');
    progModField.property('hidden', p !== 'payload_mod');
  };
  on(progSel.node()!, 'change', showProgramFields);
  const seedIn = field(groupFs, 'seed', t.seed)
    .append('input')
    .attr('id', f('seed'))
    .attr('type', 'number')
    .attr('min', 0)
    .property('value', String(opts.seed));
  const listWrap = groupFs.append('div').attr('class', 'rl-field rl-dv-wide');
  listWrap.append('label').attr('for', f('clientlist')).text(t.clientList);
  const clientList = listWrap.append('textarea').attr('id', f('clientlist')).attr('rows', 2).attr('spellcheck', 'false');
  // A paste of more clients than the bound is refused before it reaches the
  // box: the browser itself stalls for a minute laying out a million lines.
  clientList.on('paste', (ev: ClipboardEvent) => {
    const past = firstLinePast(ev.clipboardData?.getData('text/plain') ?? '', LIMITS.clients);
    if (past === undefined) return;
    ev.preventDefault();
    setError(t.tooManyClients(past, LIMITS.clients));
  });
  const restartBtn = groupFs.append('button').attr('type', 'button').attr('class', 'rl-primary').text(t.applyRestart);

  side.append('h2').text(t.perListener);
  const chartBox = side.append('div').attr('class', 'rl-dv-chartbox');
  const chart = new Chart(chartBox.node()!);
  const figures = side.append('dl').attr('class', 'rl-dv-figures');
  side.append('h2').attr('class', 'rl-dv-workers-h').text(t.workersHeading);
  const workersBox = side
    .append('div')
    .attr('class', 'rl-dv-workers')
    .attr('tabindex', '0')
    .attr('role', 'region')
    .attr('aria-label', seq > 1 ? `${t.workersHeading} (${seq})` : t.workersHeading);
  const workersTable = workersBox.append('table').attr('class', 'rl-table');
  const workersCaption = workersTable.append('caption');
  workersTable
    .append('thead')
    .append('tr')
    .selectAll('th')
    .data(t.workersHead)
    .join('th')
    .attr('scope', 'col')
    .text((d) => d);
  const workersBody = workersTable.append('tbody');

  // ---- Below the scene ---------------------------------------------------------------------------
  const movedBox = root.append('details').attr('class', 'rl-dv-moved').property('hidden', true);
  movedBox.append('summary').text(t.movedSummary);
  const movedBody = movedBox.append('div').attr('class', 'rl-dv-moved-body').attr('tabindex', '0').attr('role', 'region').attr('aria-label', t.movedSummary);
  const summary = root.append('p').attr('class', 'rl-dv-summary').attr('id', f('summary'));

  const tableWrap = root.append('div').attr('class', 'rl-dv-events');
  const table = tableWrap.append('table').attr('class', 'rl-table');
  table.append('caption').text(t.eventList);
  table
    .append('thead')
    .append('tr')
    .selectAll('th')
    .data(t.eventHead)
    .join('th')
    .attr('scope', 'col')
    .text((d) => d);
  const tbody = table.append('tbody');
  const inspector = root.append('section').attr('class', 'rl-dv-inspector').attr('aria-labelledby', f('insp-h'));
  const nth = seq > 1 ? ` (${seq})` : '';
  inspector.append('h2').attr('id', f('insp-h')).text(`${t.inspector}${nth}`);
  const inspBody = inspector.append('div').attr('aria-live', 'polite');
  inspBody.append('p').text(t.inspectorHint);

  // ---- Listener lookup (the full lookup model, loaded when the panel is first opened) --------------
  const lookupSec = root.append('details').attr('class', 'rl-dv-lookup');
  lookupSec.append('summary').append('h2').attr('id', f('lk-h')).text(`${t.lookupHeading}${nth}`);
  const lkField = lookupSec.append('div').attr('class', 'rl-field');
  lkField.append('label').attr('for', f('lkscene')).text(t.lookupLayout);
  const lkSel = lkField.append('select').attr('id', f('lkscene'));
  lkSel
    .selectAll('option')
    .data([
      ['group', t.lookupScenes[0]],
      ['addr_any', t.lookupScenes[1]],
    ])
    .join('option')
    .attr('value', (d) => d[0]!)
    .text((d) => d[1]!);
  const lkBody = lookupSec.append('div').attr('class', 'rl-dv-lookup-body').attr('aria-live', 'polite');
  lkBody.append('p').text(t.lookupHint);

  // ---- State -----------------------------------------------------------------------------------
  let playing = false;
  let visible = true;
  /** What the last preset teaches, shown as the sentence under the controls until the next change. */
  let lesson: string | null = null;
  let inspected: number | null = null;
  let focus: { seq: number; start: number } | null = null;
  let struct: Structure = structure(sim, t.structure);
  let box: Box = { left: 0, top: 0, width: 1, height: 1 };
  let cssW = 0;
  let cssH = 0;
  let lastSlow = -Infinity;
  let stepAcc = 0;
  const frameBuf = newFrame(4096);
  const one = newFrame(1);
  const pixels = new Pixels();
  const ctx = canvas.node()!.getContext('2d');
  const QUEUE_WORD = pixelWord('#555555');
  const STALLED_WORD = pixelWord('#a00000');

  const setError = (msg: string) => errors.text(msg);
  const refusedText = (r: Refused): string => {
    const given = `${r.name}=${r.value.length > 32 ? `${r.value.slice(0, 32)}…` : r.value}`;
    if (r.rule === 'int') return t.wholeNumber(given, r.lo, r.hi);
    if (r.rule === 'hex32') return `${given}: ${t.secretBad}`;
    if (r.rule === 'rates') return t.ratesBad(given, r.lo, r.hi, r.max, r.entry, r.bad);
    return t.badSetting(given, r.allowed.length > 8 ? `${r.allowed.slice(0, 8).join(', ')}, …` : r.allowed.join(', '));
  };
  if (refused.length) {
    // The refusal sits in the Settings panel, beside the controls that take the values: open it.
    setError(refused.map(refusedText).join(' '));
    settingsBtn.attr('aria-expanded', 'true');
    settings.property('hidden', false);
  }
  const movedNow = (): readonly number[] => (sim.lastRemap && sim.time - sim.lastRemap.t < 6 ? sim.lastRemap.moved : []);

  const refreshStructure = () => {
    struct = structure(sim, t.structure);
    overlay.draw(struct, box, cssW, cssH);
    overlay.slide(null, box, struct.rows.length);
    closeSel
      .selectAll('option')
      .data(sim.rows)
      .join('option')
      .attr('value', (d) => String(d))
      .text((d) => `L${d}`);
    drawStalls();
    showWorkerSetting();
  };

  /** Whether the scene has room for a stall button beside each listener (else the Settings panel has the toggle). */
  const stallButtonsFit = () => struct.rows.length > 0 && struct.rows.length <= 32 && box.height / struct.rows.length >= 26;
  const drawStalls = () => {
    const fit = stallButtonsFit();
    const rh = box.height / Math.max(1, struct.rows.length);
    // At least 24 px square (WCAG 2.5.8), two pixels clear of the next row's.
    const size = Math.min(28, Math.max(24, rh - 4));
    const x = px(box, COL.listener) + ROW_PARTS.stall;
    stalls
      .selectAll<HTMLButtonElement, RowView>('button')
      .data(fit ? struct.rows : [], (d) => String(d.listener))
      .join((e) => {
        const b = e.append('button').attr('type', 'button').attr('class', 'rl-dv-stall');
        b.append('span').attr('class', 'rl-dv-stall-icon').attr('aria-hidden', 'true');
        return b;
      })
      .attr('data-listener', (d) => d.listener)
      .attr('aria-label', (d) => t.stallWorker(d.label))
      .attr('title', (d) => t.stallWorker(d.label))
      .attr('aria-pressed', (d) => String(d.stalled))
      .style('left', `${x}px`)
      .style('top', (d) => `${py(box, d.y) - size / 2}px`)
      .style('width', '28px')
      .style('height', `${size}px`);
  };
  /** Toggles listener `l`'s worker between stalled and working. */
  const toggleStall = (l: number) => {
    if (!sim.rows.includes(l)) return;
    sim.setStalled(l, !sim.worker(l).stalled);
    refreshStructure();
    drawSide();
    describe();
    if (tourAt !== null) showTour();
  };
  /** The Settings panel's worker controls follow the listener chosen there. */
  const showWorkerSetting = () => {
    const l = Number(closeSel.property('value'));
    const w = sim.rows.includes(l) ? sim.worker(l) : { rate: 1, stalled: false };
    srateIn.property('value', String(w.rate));
    stallSetBtn.attr('aria-pressed', String(w.stalled)).text(w.stalled ? t.resumeToggle : t.stallToggle);
  };

  const describe = () => {
    const paused = playing && !visible;
    now.text(lesson ?? t.now(nowView(sim, playing, paused)));
    summary.text(t.summary(sim));
  };
  /** The moved flows: ringed in the scene; here a short list (the first {@link MOVED_LIST} of them, in a scrolled box). */
  const showRemap = () => {
    const r = sim.lastRemap;
    remapLine.text(r ? t.remap(r, sim.rows.length) : '');
    movedBox.property('hidden', !r || r.moved.length === 0);
    movedBody.selectAll('*').remove();
    if (!r?.moved.length) return;
    const name = (l: number) => (l === NO_LISTENER ? t.none : `L${l}`);
    const mt = movedBody.append('table').attr('class', 'rl-table rl-dv-moved-table');
    mt.append('caption').text(t.movedCaption(r.moved.length, MOVED_LIST));
    mt.append('thead')
      .append('tr')
      .selectAll('th')
      .data(t.movedHead)
      .join('th')
      .attr('scope', 'col')
      .text((d) => d);
    mt.append('tbody')
      .selectAll('tr')
      .data(r.moved.slice(0, MOVED_LIST).map((ci, k) => [`${sim.clients[ci]!.saddr}:${sim.clients[ci]!.sport}`, name(r.from[k]!), name(r.to[k]!)]))
      .join('tr')
      .selectAll('td')
      .data((d) => d)
      .join('td')
      .text((d) => d);
  };

  /** The stage width and pixel ratio, which set the scene's size; a ResizeObserver report at the size last drawn redraws nothing. */
  const sizeKey = () => `${stage.node()!.clientWidth}@${globalThis.devicePixelRatio || 1}`;
  let sizedFor = '';
  /** Sizes the canvas to the stage; `draw: false` leaves the structure to the caller, who draws it next. */
  const resize = (draw = true) => {
    const node = stage.node()!;
    sizedFor = sizeKey();
    const w = Math.max(280, node.clientWidth);
    // Taller than wide-screen proportions on a phone, so the rows keep room for their labels.
    const h = Math.max(300, Math.min(520, Math.round(w * (w < 600 ? 0.95 : 0.55))));
    cssW = w;
    cssH = h;
    const dpr = Math.min(2, globalThis.devicePixelRatio || 1);
    canvas
      .attr('width', Math.round(w * dpr))
      .attr('height', Math.round(h * dpr))
      .style('width', `${w}px`)
      .style('height', `${h}px`);
    ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
    pixels.resize(Math.round(w * dpr), Math.round(h * dpr), dpr);
    box = { left: 12, top: 44, width: w * 0.86, height: h - 56 };
    if (!draw) return;
    overlay.draw(struct, box, w, h);
    overlay.marker(markerFor(), box);
    drawStalls();
    placeSpot();
  };

  const eventCells = (e: DispatchEvent) => [
    `${e.t.toFixed(3)}`,
    e.kind,
    `${e.tuple.saddr}:${e.tuple.sport}`,
    String(e.cpu),
    e.listener === null ? t.none : `L${e.listener}`,
    e.slot === null ? '—' : String(e.slot),
    e.hashHex ? `0x${e.hashHex}` : '—',
    e.note,
  ];

  // The event list reuses its row elements (row i shows the i-th event of the window), and holds
  // still while keyboard focus is inside it during playback: a rebuilt row under the focus sent
  // focus back to <body>.
  const ROWS = 12;
  const rowEls: { tr: HTMLTableRowElement; btn: HTMLButtonElement; tds: HTMLTableCellElement[] }[] = [];
  for (let i = 0; i < ROWS; i++) {
    const tr = tbody.append('tr').property('hidden', true);
    const btn = tr.append('th').attr('scope', 'row').append('button').attr('type', 'button').attr('class', 'rl-dv-rowbtn');
    const tds = Array.from({ length: 8 }, () => tr.append('td').node()!);
    rowEls.push({ tr: tr.node()!, btn: btn.node()!, tds });
  }
  const focusInList = () => {
    const a = (el.getRootNode() as ShadowRoot | Document).activeElement;
    return !!a && tbody.node()!.contains(a);
  };
  const drawTable = (force = false) => {
    if (playing && !force && focusInList()) return;
    const cur = sim.log.cursor;
    const end = playing || cur < 0 ? sim.log.nextSeq - 1 : Math.min(sim.log.nextSeq - 1, cur + 4);
    const rows = sim.log.window(end, ROWS);
    rowEls.forEach((r, i) => {
      const e = rows[i];
      r.tr.hidden = !e;
      if (!e) return;
      const chosen = e.seq === cur && !playing;
      r.tr.classList.toggle('rl-chosen', chosen);
      if (chosen) r.tr.setAttribute('aria-current', 'true');
      else r.tr.removeAttribute('aria-current');
      const label = String(e.seq);
      if (r.btn.textContent !== label) {
        r.btn.textContent = label;
        r.btn.setAttribute('aria-label', t.inspectEvent(e.seq));
      }
      eventCells(e).forEach((c, k) => {
        if (r.tds[k]!.textContent !== c) r.tds[k]!.textContent = c;
      });
    });
  };

  /** Rows of the workers table: the first {@link WORKER_ROWS} in slot order, then every stalled or slowed one. */
  const drawWorkers = () => {
    const shown = struct.rows.filter((r, i) => i < WORKER_ROWS || r.stalled || r.tag !== '');
    workersCaption.text(t.workersCaption(shown.length, struct.rows.length));
    workersBody
      .selectAll<HTMLTableRowElement, RowView>('tr')
      .data(shown, (d) => String(d.listener))
      .join((e) => {
        const tr = e.append('tr');
        tr.append('th').attr('scope', 'row');
        for (let k = 0; k < 4; k++) tr.append('td');
        return tr;
      })
      .classed('rl-dv-stalled', (d) => d.stalled)
      .each(function (d) {
        const cells = (this as HTMLTableRowElement).cells;
        const vals = [
          d.label,
          t.rateOf(sim.worker(d.listener)),
          String(sim.counts[d.listener] ?? 0),
          String(Math.floor(sim.accepted[d.listener] ?? 0)),
          String(Math.floor(sim.queue[d.listener] ?? 0)),
        ];
        vals.forEach((v, k) => {
          if (cells[k]!.textContent !== v) cells[k]!.textContent = v;
        });
      });
  };
  const drawSide = () => {
    const bars = struct.rows.map((r) => ({ label: r.label, count: sim.counts[r.listener] ?? 0, colour: r.colour, hollow: r.fill === 'hollow' }));
    const fr = fairness(bars.map((b) => b.count));
    chart.draw(bars, fr, t.chartLabel);
    let longest: { label: string; queue: number } | null = null;
    for (const r of struct.rows) {
      const q = Math.floor(sim.queue[r.listener] ?? 0);
      if (q > 0 && (!longest || q > longest.queue)) longest = { label: r.label, queue: q };
    }
    drawWorkers();
    const items = t.figures(fr, sim.dropped, sim.closedCounts, sim.particles.inFlight(sim.time), fmtRatio(fr.maxMinRatio), longest);
    figures
      .selectAll('div')
      .data(items)
      .join((e) => {
        const d = e.append('div');
        d.append('dt');
        d.append('dd');
        return d;
      });
    figures
      .selectAll('div')
      .select('dt')
      .text((d) => (d as [string, string])[0]);
    figures
      .selectAll('div')
      .select('dd')
      .text((d) => (d as [string, string])[1]);
  };

  /** The event the marker and the line under the scene are about: the inspected one, else the cursor (paused) or the newest (playing). */
  const focusedEvent = (): DispatchEvent | undefined => {
    const seq = inspected ?? (playing ? sim.log.last()?.seq : sim.log.cursor);
    if (seq === undefined || seq === null || seq < 0) return undefined;
    return sim.log.get(seq);
  };
  /** Only a SYN or a datagram goes through the reuseport selection; an ACK or SYN-ACK shows no hash. */
  const selected = (e: DispatchEvent) => e.kind === 'SYN' || e.kind === 'UDP';
  const markerFor = (): Marker | null => {
    const e = focusedEvent();
    if (!e?.explain || !selected(e)) return null;
    return { y: hashToY(e.explain.hash.hash), text: `0x${e.explain.hash.hashHex}` };
  };
  const showFocused = () => {
    overlay.marker(markerFor(), box);
    const e = focusedEvent();
    stageLine.text(!e ? '' : selected(e) && e.explain ? t.stageLine(e, markerText(e.explain, lang)) : t.stageLineUnselected(e));
  };

  const inspect = (seq: number) => {
    const e = sim.log.get(seq);
    if (!e) return;
    inspected = seq;
    sim.log.seek(seq);
    inspBody.selectAll('*').remove();
    const m = listenerMark(e.listener);
    inspBody.append('p').attr('class', 'rl-headline').text(t.headline(e, m.label));
    if (!selected(e)) inspBody.append('p').text(t.belongsTo(e));
    if (e.explain) renderExplain(inspBody.append('div').node()!, explainView(e.explain, lang), 3, t.card);
    else inspBody.append('p').text(t.notDelivered);
    inspLookup = inspBody.append('p').attr('class', 'rl-dv-insp-lookup').node();
    showFocused();
    showLookup();
    emit(el, 'stepped', { seq: e.seq, listener: e.listener, kind: e.kind });
  };

  // The lookup model, its Host for the current layout, and the last answer.
  let lk: LookupModule | null = null;
  let lkHost: { key: string; host: InstanceType<LookupModule['Host']> } | null = null;
  let inspLookup: HTMLElement | null = null;
  let lkReady: Promise<void> | null = null;
  /** Fetches the larger lookup package, once, when the Listener lookup panel is first opened. */
  const loadLookupModel = (): Promise<void> => {
    lkReady ??= import('../model/lookup').then(async (m) => {
      await m.loadLookup();
      lk = m;
    });
    lkReady.catch((e: unknown) => lkBody.text(t.lookupFailed(e instanceof Error ? e.message : String(e))));
    return lkReady;
  };
  const lookupOpen = () => (lookupSec.node() as HTMLDetailsElement).open;
  const planFor = (scene: LookupScene): HostPlan => {
    const s = sim.summary();
    return scene === 'addr_any'
      ? addrAnyPlan(sim.opts.proto, sim.opts.secret)
      : groupPlan({
          proto: sim.opts.proto,
          bind: s.bind,
          port: s.port,
          secret: sim.opts.secret,
          program: sim.opts.program,
          members: sim.group.members(),
          closedOrder: closedOrderOf(sim),
        });
  };
  const hostFor = (m: LookupModule, plan: HostPlan) => {
    const key = `${sim.opts.kernel}|${JSON.stringify(plan.layout)}`;
    if (lkHost?.key !== key) {
      lkHost?.host.dispose();
      lkHost = null;
      lkHost = { key, host: new m.Host(sim.opts.kernel, plan.layout) };
    }
    return lkHost.host;
  };
  /** The model's lookup of the inspected packet in `scene`'s layout. */
  const lookupOf = (scene: LookupScene, seq: number): { plan: HostPlan; view: LookupView } | { error: string } | null => {
    const e = sim.log.get(seq);
    if (!e || !lk) return null;
    const plan = planFor(scene);
    try {
      const host = hostFor(lk, plan);
      const ex = host.lookup(hostPacket(plan, sim.opts.proto, e.tuple, e.cpu, e.payload));
      return { plan, view: lookupView(plan, host.results(), ex, lang) };
    } catch (err) {
      return { error: (err as Error).message };
    }
  };
  const showLookup = () => {
    if (inspected === null || !lookupOpen()) {
      if (inspLookup && !lookupOpen()) inspLookup.textContent = t.lookupClosed;
      return;
    }
    const seq = inspected;
    if (!lk) {
      lkBody.selectAll('*').remove();
      lkBody.append('p').text(t.lookupLoading);
      void loadLookupModel().then(() => inspected === seq && showLookup());
      return;
    }
    const scene = lkSel.property('value') as LookupScene;
    const r = lookupOf(scene, seq);
    lkBody.selectAll('*').remove();
    if (!r) return;
    if ('error' in r) lkBody.append('p').attr('class', 'rl-fallback').text(t.lookupRefused(r.error));
    else renderLookup(lkBody.node()!, r.plan.describe, r.view, 3, t.lookup);
    const walkRow = (row: string[], hit: boolean) => `${row[0]!.split(' (')[0]} ${t.score} ${row[1]!.split(' ')[0]}${hit ? ' ✓' : ''}`;
    stageLookup.text(
      'error' in r
        ? ''
        : `${t.lookupOf(seq, scene === 'addr_any')}: ` +
            `${r.view.walks.map((w) => `${w.caption} [${w.rows.map((row, i) => walkRow(row, w.highlight.includes(i))).join(', ')}]`).join(' → ')} ` +
            `→ ${r.view.socket === null ? t.noSocket : `${t.socket(r.view.socket)}${r.view.listener !== null ? ` = L${r.view.listener}` : ''}`}`,
    );
    // The inspector names the lookup in the visualized group's layout in one line.
    const g = scene === 'group' ? r : lookupOf('group', seq);
    if (inspLookup && g) {
      const e = sim.log.get(seq);
      if ('error' in g) inspLookup.textContent = t.inspLookupRefused(g.error);
      else {
        const agree = e && g.view.listener !== e.listener ? t.liveDiffers(e.listener === null ? t.noSocket : `L${e.listener}`) : '';
        inspLookup.textContent = t.inspLookup(g.view.walks.map((w) => t.candidates(w.caption, w.rows.length)).join('; '), g.view.reason, agree);
      }
    }
  };
  on(lkSel.node()!, 'change', showLookup);
  on(lookupSec.node()!, 'toggle', () => {
    if (!lookupOpen()) {
      stageLookup.text('');
      return;
    }
    void loadLookupModel().then(showLookup, () => {});
    if (inspected === null) {
      lkBody.selectAll('*').remove();
      lkBody.append('p').text(t.lookupHint);
    }
  });

  const setPlaying = (p: boolean) => {
    const was = playing;
    playing = p;
    playBtn.text(p ? t.pause : t.play).attr('aria-pressed', String(p));
    if (!p) {
      const last = sim.log.last();
      if (last && sim.log.cursor < 0) sim.log.seek(last.seq);
    } else {
      focus = null;
      inspected = null;
      if (!was)
        emit(el, 'started', {
          kernel: sim.opts.kernel,
          proto: sim.opts.proto,
          listeners: sim.rows.length,
          clients: sim.clients.length,
          rate: sim.opts.rate,
          speed,
        });
    }
    describe();
    showFocused();
    drawTable(true);
  };

  const step = (dir: 1 | -1) => {
    lesson = null;
    if (playing) setPlaying(false);
    const e = dir === 1 ? sim.log.stepForward(() => sim.nextConnection()) : sim.log.stepBack();
    if (!e) return;
    focus = { seq: e.seq, start: performance.now() };
    inspect(e.seq);
    drawTable(true);
    drawSide();
    describe();
    now.text(t.step(e));
  };

  /** Reads the settings form into options; undefined (with the error shown) when a field is wrong. */
  const readForm = (): SimOptions | undefined => {
    const num = (s: typeof rateIn, lo: number, hi: number, name: string): number | undefined => {
      const v = Number(s.property('value'));
      if (!Number.isInteger(v) || v < lo || v > hi) {
        setError(t.wholeNumber(name, lo, hi));
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
    if (listeners === undefined || clients === undefined || cpus === undefined || seed === undefined || rate === undefined) return undefined;
    if (secret === undefined) {
      setError(t.secretBad);
      return undefined;
    }
    const prog = String(progSel.property('value'));
    let program: Program | null = null;
    if (prog === 'cpu') program = { kind: 'cpu' };
    if (prog === 'index') {
      const idx = num(progIdx, 0, 65535, t.fixedIndexName);
      if (idx === undefined) return undefined;
      program = { kind: 'index', index: idx };
    }
    if (prog === 'payload_mod') {
      const m = num(progMod, 1, 4294967295, t.payloadModulusName);
      if (m === undefined) return undefined;
      program = { kind: 'payload_mod', modulus: m };
    }
    if (prog === 'pass') program = { kind: 'pass' };
    if (prog === 'drop') program = { kind: 'drop' };
    let clientListParsed = null;
    const text = String(clientList.property('value'));
    if (text.trim()) {
      const r = parseClients(text, cpus, seed, LIMITS.clients);
      if (r.tooMany) {
        setError(t.tooManyClients(r.tooMany.line, r.tooMany.max));
        return undefined;
      }
      if (r.errors.length) {
        setError(t.clientListErrors(r.errors.slice(0, 5)));
        return undefined;
      }
      if (!r.clients.length) {
        setError(t.noClient);
        return undefined;
      }
      clientListParsed = r.clients;
    }
    return {
      ...sim.opts,
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
    };
  };

  const restart = (): boolean => {
    if (tourAt !== null) closeTour(false);
    setError('');
    lesson = null;
    const next = readForm();
    if (!next) return false;
    const prev = sim.opts;
    sim.opts = next;
    let ok = true;
    try {
      sim.rebuild();
    } catch (e) {
      sim.opts = prev;
      sim.rebuild();
      setError(t.cannotBuild((e as Error).message));
      ok = false;
    }
    sim.boot = 0;
    inspected = null;
    focus = null;
    inspLookup = null;
    stageLookup.text('');
    lkBody.selectAll('*').remove();
    lkBody.append('p').text(t.lookupHint);
    refreshStructure();
    drawTable(true);
    drawSide();
    showRemap();
    showFocused();
    describe();
    return ok;
  };

  const live = (fn: () => void) => () => {
    setError('');
    lesson = null;
    try {
      fn();
    } catch (e) {
      setError((e as Error).message);
    }
    if (reduced) sim.snapRows();
    refreshStructure();
    showLookup();
    showRemap();
    describe();
    drawSide();
  };
  const closeListener = live(() => {
    const l = Number(closeSel.property('value'));
    if (!sim.rows.includes(l)) throw new Error(t.chooseMember);
    sim.close(l, reduced);
  });

  /** Sets the form to a preset's settings, restarts, then makes its change (if any) and plays. */
  const applyPreset = (p: Preset) => {
    const o = { ...PRESET_BASE, ...p.options };
    kernelSel.property('value', o.kernel);
    protoSel.property('value', o.proto);
    bindSel.property('value', o.wildcard ? 'wildcard' : 'specific');
    listenersIn.property('value', String(o.listeners));
    clientsIn.property('value', String(o.clients));
    rateIn.property('value', String(o.rate));
    cpusIn.property('value', String(o.cpus));
    progSel.property('value', o.program);
    showProgramFields();
    clientList.property('value', '');
    if (!restart()) return;
    if (p.close !== undefined) {
      closeSel.property('value', String(p.close));
      closeListener();
    }
    if (p.lookup) {
      lkSel.property('value', p.lookup);
      (lookupSec.node() as HTMLDetailsElement).open = true;
    }
    if (!reduced) setPlaying(true);
    lesson = t.presetSays[p.id];
    describe();
  };
  presetBtns.each(function (d) {
    on(this as HTMLElement, 'click', () => applyPreset(d));
  });

  // ---- Workers: stall toggles in the scene and in Settings, service rates in Settings -----------------
  on(stalls.node()!, 'click', (ev) => {
    const b = (ev.target as HTMLElement).closest<HTMLButtonElement>('button.rl-dv-stall');
    if (b) toggleStall(Number(b.dataset.listener));
  });
  on(stallSetBtn.node()!, 'click', () => {
    toggleStall(Number(closeSel.property('value')));
    showWorkerSetting();
  });
  on(closeSel.node()!, 'change', showWorkerSetting);
  on(setRateBtn.node()!, 'click', () => {
    const l = Number(closeSel.property('value'));
    const v = Number(srateIn.property('value'));
    if (!(v >= RATE_BOUNDS.lo && v <= RATE_BOUNDS.hi)) {
      setError(t.serviceRateBad);
      return;
    }
    if (!sim.rows.includes(l)) return;
    setError('');
    sim.setRate(l, Math.round(v * 100) / 100);
    refreshStructure();
    drawSide();
    describe();
  });

  // ---- The guided tour -------------------------------------------------------------------------
  /** The step shown (index into TOUR_STEP_IDS), or null when the tour is closed. */
  let tourAt: number | null = null;
  let tourWasPlaying = false;
  /** The SYN (or datagram) the tour talks about. */
  let tourSeq: number | null = null;
  /** The listener whose worker the tour stalled (resumed when the tour closes). */
  let tourStalled: number | null = null;
  const tourEvent = () => (tourSeq === null ? undefined : sim.log.get(tourSeq));
  /** The stalled worker the last step is about: the tour's listener if stalled, else the first stalled one. */
  const stalledListener = (): number | null => {
    const l = tourEvent()?.listener;
    if (l != null && sim.rows.includes(l) && sim.worker(l).stalled) return l;
    return sim.rows.find((r) => sim.worker(r).stalled) ?? null;
  };
  const placeSpot = () => {
    if (tourAt === null) {
      spot.property('hidden', true);
      return;
    }
    const step = TOUR_STEP_IDS[tourAt]!;
    const l = tourEvent()?.listener;
    const st = stalledListener();
    const r = tourSpot(step, {
      box,
      width: cssW,
      rows: struct.rows.length,
      row: l == null ? -1 : sim.rowOf(l),
      stalledRow: st === null ? -1 : sim.rowOf(st),
      stallButtons: stallButtonsFit(),
      reservoir: struct.selection !== 'group',
    });
    spot
      .property('hidden', false)
      .attr('data-part', step)
      .style('left', `${r.x}px`)
      .style('top', `${r.y}px`)
      .style('width', `${r.w}px`)
      .style('height', `${r.h}px`);
  };
  /** Brings the tour's words and the highlighted part into view together when they are not (a phone has room for both below the top bar). */
  const revealTour = () => {
    const box = tourBox.node() as HTMLElement;
    const sp = spot.node() as HTMLElement;
    if (typeof box.scrollIntoView !== 'function') return;
    const behavior: ScrollBehavior = reduced ? 'auto' : 'instant';
    const seen = (n: HTMLElement) => {
      const r = n.getBoundingClientRect();
      return r.top >= 0 && r.bottom <= innerHeight;
    };
    if (seen(box) && seen(sp)) return;
    box.scrollIntoView({ block: 'start', behavior });
    if (!seen(sp)) sp.scrollIntoView({ block: 'nearest', behavior });
  };
  const showTour = () => {
    if (tourAt === null) return;
    const step: TourStep = TOUR_STEP_IDS[tourAt]!;
    const st = stalledListener();
    const facts = tourFacts(sim, tourEvent(), st, tourStalled !== null && st === tourStalled);
    const says = { title: t.tourStepTitle(step, facts), text: t.tourSays(step, facts) };
    tourCount.text(t.tourStep(tourAt + 1, TOUR_STEP_IDS.length));
    tourBox.attr('data-step', step);
    tourText.selectAll('*').remove();
    tourText.append('p').attr('class', 'rl-dv-tour-title').text(says.title);
    tourText.append('p').text(says.text);
    tourBack.attr('aria-disabled', String(tourAt === 0));
    tourNext.text(tourAt === TOUR_STEP_IDS.length - 1 ? t.tourDone : t.tourNext);
    placeSpot();
  };
  /** Goes to step `i`: the last step stalls the chosen listener's worker (when none is stalled) and runs the scene on a few seconds so its queue grows. */
  const goTour = (i: number) => {
    tourAt = Math.max(0, Math.min(TOUR_STEP_IDS.length - 1, i));
    if (TOUR_STEP_IDS[tourAt] === 'stalled' && stalledListener() === null) {
      const l = tourEvent()?.listener;
      if (l != null && sim.rows.includes(l)) {
        sim.setStalled(l, true);
        tourStalled = l;
        for (let k = 0; k < 80; k++) sim.advance(0.1, true);
        refreshStructure();
        drawTable(true);
        drawSide();
        describe();
      }
    }
    showTour();
    revealTour();
  };
  const openTour = () => {
    tourWasPlaying = playing;
    if (playing) setPlaying(false);
    lesson = null;
    // A SYN (or datagram) to talk about: the focused one, else the newest in the list, else the next ones.
    let e = focusedEvent();
    if (!e || !selected(e) || !e.explain) {
      const last = sim.log.last();
      e = last
        ? sim.log
            .window(last.seq, 60)
            .reverse()
            .find((x) => selected(x) && x.explain)
        : undefined;
    }
    for (let k = 0; k < 8 && (!e || !selected(e) || !e.explain); k++) e = sim.log.stepForward(() => sim.nextConnection()) ?? undefined;
    tourSeq = e?.seq ?? null;
    if (e) {
      focus = { seq: e.seq, start: performance.now() };
      inspect(e.seq);
      drawTable(true);
      drawSide();
    }
    tourBox.property('hidden', false);
    tourBtn.attr('aria-expanded', 'true');
    goTour(0);
    describe();
    (tourText.node() as HTMLElement).focus({ preventScroll: true });
  };
  /** Closes the tour: the box and the highlight go, a worker the tour stalled resumes, focus returns to the tour button. */
  const closeTour = (returnFocus = true) => {
    if (tourAt === null) return;
    tourAt = null;
    tourBox.property('hidden', true).attr('data-step', null);
    spot.property('hidden', true);
    tourBtn.attr('aria-expanded', 'false');
    if (tourStalled !== null && sim.worker(tourStalled).stalled) {
      sim.setStalled(tourStalled, false);
      refreshStructure();
      drawSide();
    }
    tourStalled = null;
    tourSeq = null;
    describe();
    if (returnFocus) (tourBtn.node() as HTMLElement).focus();
    if (returnFocus && tourWasPlaying && !reduced) setPlaying(true);
  };
  on(tourBtn.node()!, 'click', () => (tourAt === null ? openTour() : closeTour()));
  on(tourNext.node()!, 'click', () => {
    if (tourAt === null) return;
    if (tourAt >= TOUR_STEP_IDS.length - 1) closeTour();
    else goTour(tourAt + 1);
  });
  on(tourBack.node()!, 'click', () => {
    if (tourAt !== null && tourAt > 0) goTour(tourAt - 1);
  });
  on(tourClose.node()!, 'click', () => closeTour());
  on(root.node()!, 'keydown', (ev) => {
    if (ev.key === 'Escape' && tourAt !== null) {
      ev.preventDefault();
      closeTour();
    }
  });

  on(settingsBtn.node()!, 'click', () => {
    const open = settingsBtn.attr('aria-expanded') !== 'true';
    settingsBtn.attr('aria-expanded', String(open));
    settings.property('hidden', !open);
    if (open) (settings.select('button').node() as HTMLElement | null)?.focus();
  });
  on(playBtn.node()!, 'click', () => setPlaying(!playing));
  on(backBtn.node()!, 'click', () => step(-1));
  on(fwdBtn.node()!, 'click', () => step(1));
  on(speedSel.node()!, 'change', () => (speed = Number(speedSel.property('value'))));
  on(rateIn.node()!, 'change', () => {
    const v = Number(rateIn.property('value'));
    if (Number.isFinite(v) && v > 0 && v <= LIMITS.rate) {
      sim.opts.rate = v;
      setError('');
    } else setError(t.rateBad(LIMITS.rate));
  });
  on(restartBtn.node()!, 'click', () => void restart());
  on(
    setSecretBtn.node()!,
    'click',
    live(() => {
      const s = parseHex32(String(secretIn.property('value')));
      if (s === undefined) throw new Error(t.secretBad);
      sim.setSecret(s);
    }),
  );
  on(
    bootBtn.node()!,
    'click',
    live(() => {
      const s = sim.newBoot();
      secretIn.property('value', hex32(s));
    }),
  );
  on(
    addBtn.node()!,
    'click',
    live(() => void sim.join(reduced)),
  );
  on(closeBtn.node()!, 'click', closeListener);
  on(
    pinBtn.node()!,
    'click',
    live(() => {
      const c = Number(cpuIn.property('value'));
      if (!Number.isInteger(c) || c < 0) throw new Error(t.cpuBad);
      sim.setIncomingCpu(Number(closeSel.property('value')), c, reduced);
    }),
  );
  on(
    unpinBtn.node()!,
    'click',
    live(() => sim.setIncomingCpu(Number(closeSel.property('value')), undefined, reduced)),
  );
  on(tbody.node()!, 'click', (ev) => {
    const btn = (ev.target as HTMLElement).closest('button.rl-dv-rowbtn');
    if (!btn) return;
    const seq = Number(btn.textContent);
    if (playing) setPlaying(false);
    focus = { seq, start: performance.now() };
    inspect(seq);
    drawTable(true);
  });
  on(canvas.node() as unknown as HTMLElement, 'click', (ev) => {
    const r = (canvas.node() as HTMLCanvasElement).getBoundingClientRect();
    const i = hitTest(frameBuf, box, ev.clientX - r.left, ev.clientY - r.top, HIT_RADIUS);
    if (i < 0) return;
    const seq = frameBuf.seq[i]!;
    if (playing) setPlaying(false);
    inspect(seq);
    drawTable(true);
  });

  // ---- Frames ----------------------------------------------------------------------------------
  const clock = new FrameClock();
  // The event table, the chart and the figures refresh once a second while
  // playing: each refresh lays out and repaints DOM, which costs whole frames
  // when rasterising without a GPU.
  const SLOW_MS = 1000;
  let focusRoute: number[] | null = null;
  const render = (now: number) => {
    if (!ctx) return;
    // Clients, packets and accept queues go into one pixel buffer, put on the canvas in one call.
    pixels.clear();
    stampClients(pixels, box, COL.client, sim.clientListener, 6);
    sim.frame(frameBuf);
    stampPackets(pixels, frameBuf, box, 3);
    // Accept queues: 3 px a connection, scaled down together when the longest would not fit
    // (a stalled worker's keeps growing); a stalled worker's queue is striped dark red.
    const rh = box.height / Math.max(1, struct.rows.length);
    const qx = px(box, COL.listener) + ROW_PARTS.queue;
    const qmax = queueBarMax(cssW, px(box, COL.listener));
    let longest = 0;
    for (const r of struct.rows) longest = Math.max(longest, sim.queue[r.listener] ?? 0);
    const perConn = Math.min(3, qmax / Math.max(1, longest));
    for (const r of struct.rows) {
      const q = sim.queue[r.listener] ?? 0;
      if (q < 0.5) continue;
      const y = py(box, sim.listenerY(r.listener)) - Math.max(0.5, rh * 0.3);
      const h = Math.max(1, rh * 0.6);
      const len = Math.max(1, Math.min(qmax, q * perConn));
      if (!r.stalled) pixels.rect(qx, y, len, h, QUEUE_WORD);
      else for (let sx = 0; sx < len; sx += 4) pixels.rect(qx + sx, y, Math.min(3, len - sx), h, STALLED_WORD);
    }
    stampMoved(pixels, box, COL.client, sim.clientListener.length, movedNow(), 6);
    pixels.blit(ctx);
    focusRoute = null;
    if (focus && !playing) {
      const e = sim.log.get(focus.seq);
      if (e) {
        const route = sim.path(e.kind, e.client, e.hash === null ? 0.5 : hashToY(e.hash), e.listener ?? NO_LISTENER);
        focusRoute = route.pts;
        drawRoute(ctx, box, route.pts);
        const u = reduced ? 1 : Math.min(1, (now - focus.start) / FOCUS_MS);
        const p = { x: 0, y: 0 };
        along(route.pts, route.w, u, p);
        one.n = 1;
        one.x[0] = p.x;
        one.y[0] = p.y;
        one.kind[0] = KINDS.indexOf(e.kind);
        one.listener[0] = e.listener ?? NO_LISTENER;
        one.seq[0] = e.seq;
        drawPackets(ctx, one, box, 6, e.seq);
      }
    }
    if (inspected !== null && playing === false) {
      // The inspected packet, if still in flight, ringed.
      for (let i = 0; i < frameBuf.n; i++) {
        if (frameBuf.seq[i] !== inspected) continue;
        ctx.beginPath();
        ctx.arc(px(box, frameBuf.x[i]!), py(box, frameBuf.y[i]!), 9, 0, Math.PI * 2);
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 2;
        ctx.stroke();
      }
    }
    const sl = sim.slide;
    if (sl && sl.u < 1) {
      const row = struct.rows.find((r) => r.listener === sl.listener);
      if (row) overlay.slide({ row, from: sl.from, to: sl.to, u: sl.u }, box, struct.rows.length);
    } else overlay.slide(null, box, struct.rows.length);
  };
  clock.subscribe((now, dt) => {
    const sec = dt / 1000;
    if (playing) {
      if (reduced) {
        stepAcc += sec;
        if (stepAcc >= 1) {
          stepAcc = 0;
          sim.advance(speed, true);
        }
      } else sim.advance(sec * speed);
    }
    sim.animateRows(reduced ? Infinity : sec);
    render(now);
    if (now - lastSlow > SLOW_MS) {
      lastSlow = now;
      if (playing) {
        drawTable();
        drawSide();
        describe();
      }
      showFocused();
    }
  });

  const io =
    typeof IntersectionObserver === 'function'
      ? new IntersectionObserver((entries) => {
          visible = entries.some((e) => e.isIntersecting);
          clock.setVisible(visible);
          describe();
        })
      : null;
  if (io) {
    clock.setVisible(false); // until the observer's first report
    io.observe(stage.node()!);
  }
  // The observer reports once at the start, at the size just drawn: only a new size redraws.
  const ro =
    typeof ResizeObserver === 'function'
      ? new ResizeObserver(() => {
          if (sizeKey() !== sizedFor) resize();
        })
      : null;
  ro?.observe(stage.node()!);

  // The structure is drawn once, by refreshStructure, at the size resize set.
  resize(false);
  refreshStructure();
  overlay.marker(markerFor(), box);
  placeSpot();
  drawTable(true);
  drawSide();
  describe();
  clock.start();
  setPlaying(!reduced && (options.autoplay ?? true));
  // "Embed this" writes the group as it is set now (the program and a client list have no attribute).
  provideSettings(el, () => {
    const o = sim.opts;
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
  });
  // For tests and benchmarks: the frame clock and the scene.
  (hostOf(el) as HTMLElement & { __dispatch?: unknown }).__dispatch = {
    clock,
    sim,
    /** Drawn packets in canvas CSS pixels. */
    packets: () =>
      Array.from({ length: frameBuf.n }, (_, i) => ({
        x: px(box, frameBuf.x[i]!),
        y: py(box, frameBuf.y[i]!),
        seq: frameBuf.seq[i]!,
        kind: KIND_OF_CODE[frameBuf.kind[i]!],
        listener: frameBuf.listener[i]!,
      })),
    /** Client i's mark in canvas CSS pixels. */
    clientAt: (i: number) => ({ x: px(box, COL.client), y: py(box, (i + 0.5) / Math.max(1, sim.clients.length)) }),
    /** The focused packet's route in canvas CSS pixels ([x, y] pairs), or null. */
    focusRoute: () =>
      focusRoute ? Array.from({ length: focusRoute.length / 2 }, (_, i) => [px(box, focusRoute![2 * i]!), py(box, focusRoute![2 * i + 1]!)]) : null,
    /** Column x positions in canvas CSS pixels. */
    columns: () => Object.fromEntries(Object.entries(COL).map(([k, v]) => [k, px(box, v)])),
  };

  return () => {
    clock.stop();
    io?.disconnect();
    ro?.disconnect();
    for (const c of cleanups) c();
    lkHost?.host.dispose();
    sim.dispose();
    delete (hostOf(el) as HTMLElement & { __dispatch?: unknown }).__dispatch;
    root.remove();
  };
}

/** A setting that was refused when read: its name and value as given, and the rule it broke. */
type Refused = { name: string; value: string } & (
  | { rule: 'int'; lo: number; hi: number }
  | { rule: 'one-of'; allowed: string[] }
  | { rule: 'hex32' }
  | { rule: 'rates'; lo: number; hi: number; max: number; entry: number; bad: string }
);

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
    refused,
  };
}

/**
 * `<reuseport-dispatch kernel="6.18" proto="tcp" listeners="8" clients="200" rate="40" speed="1" seed="1"
 * secret="0x..." wildcard cpus="4" rates="1,1,0.5" autoplay="false" from-url>`; `from-url` lets the page's query
 * (?kernel=6.18&listeners=8&bind=wildcard…) override the attributes.
 */
export const ReuseportDispatchElement = islandElement(mount, readDispatch, [
  'kernel',
  'proto',
  'listeners',
  'clients',
  'rate',
  'speed',
  'seed',
  'secret',
  'wildcard',
  'cpus',
  'autoplay',
  'compact',
  'rates',
  'lang',
]);

/** Registers `<reuseport-dispatch>` once. */
export function defineDispatchElement(): void {
  defineIsland('reuseport-dispatch', ReuseportDispatchElement);
}

/** The close order when a Host layout can replay it (no listener joined after a close), else undefined. */
function closedOrderOf(sim: DispatchSim): number[] | undefined {
  const h = sim.closeHistory();
  return h.joinAfterClose ? undefined : h.order;
}
