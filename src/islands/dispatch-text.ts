/**
 * The dispatch visualizer's interface words: the shape its code reads, said in
 * the page's language by the catalogue (`ui.dispatch.*` of messages/en.json and
 * messages/zh-CN.json). No sentence is written here.
 */
import { langOf, say, words, type Lang, type WidgetKey, type Words } from '../model/messages';
import type { Explain, SelectionPath } from '../model/index';
import type { DispatchEvent, EventWhat, NoTaker } from '../scene/dispatch/events';
import { changeWords, type DispatchSim, type Remap } from '../scene/dispatch/sim';
import type { StructureText } from '../scene/dispatch/structure';
import { cardText, type ExplainCardText } from '../render/explain-card';
import type { Fairness } from '../scene/dispatch/stats';
import type { TourStep } from '../scene/dispatch/tour';
import type { WorkerState } from '../scene/dispatch/workers';
import type { ReplayCheck, ReplayRefusal, ReplayTally } from '../scene/dispatch/replay';
import { hex32 } from '../hex';

/** The presets, named after what they teach. */
export type PresetId = 'workers' | 'closeOne' | 'fewClients' | 'many' | 'wildcard' | 'reservoir' | 'bpfCpu';

/** What the one sentence under the playback controls is about (plain data). */
export interface NowView {
  playing: boolean;
  /** Playing, but paused while the scene is off-screen. */
  offscreen: boolean;
  udp: boolean;
  listening: number;
  /** Selection through socks[] (group era) or the reservoir scan. */
  group: boolean;
  port: number;
  clients: number;
  kernel: string;
  /** A BPF program picks the slot. */
  program: boolean;
}

/** The {@link NowView} of a scene. */
export function nowView(sim: DispatchSim, playing: boolean, offscreen: boolean): NowView {
  const s = sim.summary();
  return {
    playing,
    offscreen,
    udp: sim.opts.proto === 'udp',
    listening: s.listening,
    group: s.selection === 'group',
    port: s.port,
    clients: sim.clients.length,
    kernel: sim.opts.kernel,
    program: sim.opts.program !== null,
  };
}

/** What the tour says about the scene now (plain data from the model's record of one SYN). */
export interface TourFacts {
  udp: boolean;
  kernel: string;
  /** How the slot was picked: by the hash (reciprocal_scale), by a BPF program, or by the reservoir scan (no socks[]). */
  pick: 'hash' | 'program' | 'reservoir';
  hashHex: string;
  /** reciprocal_scale's N (listening members). */
  n: number;
  productHex: string;
  slot: number | null;
  maxSocks: number | null;
  /** The chosen listener's label ("L3"), or null for none. */
  listener: string | null;
  /** Connections waiting in the chosen listener's queue. */
  queue: number;
  /** The normal worker's rate as a multiple of its fair share. */
  headroom: number;
  /** The stalled worker the last step is about, its queue, and whether the tour stalled it. */
  stalled: string | null;
  stalledQueue: number;
  tourStalled: boolean;
}

/** The {@link TourFacts} of a scene, for the SYN the tour is about. */
export function tourFacts(sim: DispatchSim, e: DispatchEvent | undefined, stalled: number | null, tourStalled: boolean): TourFacts {
  const s = sim.summary();
  const ex = e?.explain ?? null;
  const p = ex?.pick;
  return {
    udp: sim.opts.proto === 'udp',
    kernel: sim.opts.kernel,
    pick: s.selection !== 'group' ? 'reservoir' : p?.kind === 'program' ? 'program' : 'hash',
    hashHex: e?.hashHex ?? '',
    n: p?.kind === 'by_hash' ? p.numSocks : s.listening,
    productHex: p?.kind === 'by_hash' ? p.productHex : '',
    slot: ex?.slot ?? null,
    maxSocks: s.maxSocks,
    listener: e?.listener == null ? null : `L${e.listener}`,
    queue: e?.listener == null ? 0 : Math.floor(sim.queue[e.listener] ?? 0),
    headroom: sim.workerHeadroom,
    stalled: stalled === null ? null : `L${stalled}`,
    stalledQueue: stalled === null ? 0 : Math.floor(sim.queue[stalled] ?? 0),
    tourStalled,
  };
}

export interface DispatchText {
  /** The tour: its button, its parts, and what each step says. */
  tour: string;
  tourTitle: string;
  tourStep: (i: number, n: number) => string;
  tourNext: string;
  tourBack: string;
  tourClose: string;
  tourDone: string;
  /** A step's heading, and what it says about the scene now. */
  tourStepTitle: (step: TourStep, f: TourFacts) => string;
  tourSays: (step: TourStep, f: TourFacts) => string;
  /** The stall toggle of a listener's worker (its accessible name; aria-pressed says whether it is stalled). */
  stallWorker: (label: string) => string;
  /** The word beside a stalled worker's listener in the scene. */
  stalledWord: string;
  serviceRate: string;
  serviceRateHint: string;
  setRate: string;
  stallToggle: string;
  resumeToggle: string;
  serviceRateBad: string;
  /** A `rates` attribute or URL value that was refused. */
  ratesBad: (given: string, lo: number, hi: number, max: number, entry: number, bad: string) => string;
  workersHeading: string;
  workersHead: [string, string, string, string, string];
  workersCaption: (shown: number, all: number) => string;
  /** A worker's service rate in the workers table. */
  rateOf: (w: WorkerState) => string;
  settings: string;
  presetsLegend: string;
  presets: Record<PresetId, string>;
  /** What each preset shows, in one sentence. */
  presetSays: Record<PresetId, string>;
  /** The one sentence under the playback controls. */
  now: (v: NowView) => string;
  /** The focused packet's numbers under the scene. */
  stageLine: (e: DispatchEvent, marker: string) => string;
  stageLineUnselected: (e: DispatchEvent) => string;
  keyboardPath: string;
  rateHint: (max: number) => string;
  lookupClosed: string;
  controls: (seq: number) => string;
  playback: string;
  play: string;
  pause: string;
  stepBack: string;
  stepForward: string;
  speed: string;
  rate: string;
  groupLegend: string;
  kernel: string;
  proto: string;
  bound: string;
  bindOptions: [string, string];
  listeners: string;
  clients: string;
  cpus: string;
  program: string;
  programOptions: [string, string, string, string, string, string];
  fixedIndex: string;
  payloadModulus: string;
  seed: string;
  clientList: string;
  applyRestart: string;
  liveLegend: string;
  secret: string;
  setSecret: string;
  newBoot: string;
  addListener: string;
  listener: string;
  closeListener: string;
  setCpu: string;
  clearCpu: string;
  movedSummary: string;
  stage: string;
  shapes: string;
  colourLegend: string;
  perListener: string;
  eventList: string;
  eventHead: string[];
  inspector: string;
  inspectorHint: string;
  lookupHeading: string;
  lookupLayout: string;
  lookupScenes: [string, string];
  lookupHint: string;
  /** A control's call the kernel refused: the call's name, the errno and the model's rule in words. */
  callRefused: (call: string, errno: string, why: string) => string;
  lookupRefused: (msg: string) => string;
  inspectEvent: (seq: number) => string;
  none: string;
  remap: (r: Remap, listening: number) => string;
  movedCaption: (n: number, cap: number) => string;
  movedHead: [string, string, string];
  figures: (
    f: Fairness,
    dropped: number,
    closed: number,
    inFlight: number,
    ratio: string,
    longest: { label: string; queue: number } | null,
  ) => [string, string][];
  headline: (e: DispatchEvent, mark: string) => string;
  belongsTo: (e: DispatchEvent) => string;
  notDelivered: string;
  /** The inspector's record when no group picked (the reservoir era): the lookup's walk follows. */
  chainRecord: string;
  /** "Your server, replayed": the Settings fieldset, its file control, and what the replay says. */
  replayLegend: string;
  replayHint: string;
  replayFile: string;
  replayStop: string;
  replayStatus: (name: string, release: string, key: number | null, tally: ReplayTally) => string;
  replayDiffers: (records: number[], total: number) => string;
  /** The event list's note on a replayed record: the model's answer beside the kernel's. */
  replayCheck: (c: ReplayCheck) => string;
  replayFetch: (url: string, why: string) => string;
  replayInvalid: (name: string, why: string) => string;
  replayRefused: (name: string, field: string, problem: ReplayRefusal['problem']) => string;
  replayTooBig: (name: string, mib: number, max: number) => string;
  replayFileBad: (given: string) => string;
  step: (e: DispatchEvent) => string;
  /** What happened to a packet (the event list's last column, and the sentences above). */
  what: (w: EventWhat) => string;
  wholeNumber: (name: string, lo: number, hi: number) => string;
  /** A setting from the page's URL or the element's attribute that was refused; its default is used instead. */
  badSetting: (given: string, allowed: string) => string;
  secretBad: string;
  clientListErrors: (errs: string[]) => string;
  noClient: string;
  /** The client list has more than `max` clients; `line` holds the first past the bound. */
  tooManyClients: (line: number, max: number) => string;
  cannotBuild: (msg: string) => string;
  rateBad: (max: number) => string;
  chooseMember: string;
  cpuBad: string;
  /** Names in the range errors. */
  fixedIndexName: string;
  payloadModulusName: string;
  /** The aria-live summary of the scene. */
  summary: (sim: DispatchSim) => string;
  chartLabel: (f: Fairness, ratio: string) => string;
  /** A figure that has no value yet (max/min and Jain's index before any connection). */
  notApplicable: string;
  structure: StructureText;
  /** The hash marker's label: the model's hash, product and slot for one packet. */
  marker: (e: Explain) => string;
  /** The hash marker's label when no group picked (the reservoir era): the kernel's hash and the listener its scan took. */
  chainMarker: (hashHex: string, listener: number | null, listening: number) => string;
  card: ExplainCardText;
  /** Words of the one-line lookup under the scene and in the inspector. */
  noSocket: string;
  socket: (n: number) => string;
  score: string;
  more: (n: number) => string;
  lookupOf: (seq: number, addrAny: boolean) => string;
  inspLookupRefused: (msg: string) => string;
  liveDiffers: (answer: string) => string;
  inspLookup: (walks: string, reason: string, agree: string) => string;
  candidates: (caption: string, n: number) => string;
}

/** The tour's step `step` in the page's words: its heading and what it says about the scene now. */
function tourWords(w: Words<'dispatch'>, step: TourStep, f: TourFacts): [string, string] {
  const pkt = w.say(f.udp ? 'pkt.udp' : 'pkt.tcp');
  const listener = f.listener ?? w.say('tour.no_listener');
  const part = (key: 'hash' | 'slot_reservoir' | 'slot_program' | 'slot' | 'socks_reservoir' | 'socks' | 'listener' | 'queue' | 'stall', fields = {}) =>
    [w.say(`tour.${key}.title`), w.say(`tour.${key}.says`, { pkt, listener, ...fields })] as [string, string];
  switch (step) {
    case 'hash':
      return part('hash', { hash: f.hashHex });
    case 'slot':
      if (f.pick === 'reservoir') return part('slot_reservoir', { kernel: f.kernel });
      if (f.pick === 'program') return part('slot_program', { slot: f.slot ?? w.say('tour.no_slot') });
      return part('slot', { hash: f.hashHex, n: f.n, product: f.productHex, slot: String(f.slot) });
    case 'socks':
      if (f.pick === 'reservoir') return part('socks_reservoir');
      return part('socks', { n: f.n, max: String(f.maxSocks), slot: String(f.slot) });
    case 'listener':
      return part('listener');
    case 'queue':
      return part('queue', { queue: f.queue, headroom: f.headroom });
    default:
      return part('stall', { worker: f.stalled ?? listener, by_tour: f.tourStalled ? w.say('tour.by_tour') : '', queue: f.stalledQueue });
  }
}

/** The one sentence under the playback controls. */
function nowWords(w: Words<'dispatch'>, v: NowView): string {
  const pkt = w.say(v.udp ? 'pkt.udp' : 'pkt.tcp');
  const state = v.offscreen ? w.say('now.offscreen') : v.playing ? '' : w.say('now.paused');
  if (v.listening === 0) return w.say(v.udp ? 'now.none.udp' : 'now.none.tcp', { state, port: v.port });
  if (!v.group) return w.say('now.reservoir', { state, kernel: v.kernel, pkt, n: v.listening });
  const pick = v.program ? w.say('now.pick_program') : w.say('now.pick_hash', { n: v.listening });
  return w.say(v.udp ? 'now.group.udp' : 'now.group.tcp', { state, clients: v.clients, n: v.listening, port: v.port, pick });
}

/** What happened to a packet; why nothing took it is the model's fallback, its error as it came, or "no socket". */
function eventWords(w: Words<'dispatch'>, e: EventWhat): string {
  const why = (x: NoTaker): string => (x === null ? w.say('no_socket') : 'fallback' in x ? say(w.lang, 'fallback', x.fallback) : x.error);
  const at = (listener: number, slot: number | null): string => (slot === null ? w.say('at', { listener }) : w.say('at_slot', { listener, slot }));
  switch (e.kind) {
    case 'syn':
      return w.say('event.syn', { at: at(e.listener, e.slot) });
    case 'syn-ack':
      return w.say('event.syn_ack', { listener: e.listener });
    case 'ack':
      return w.say('event.ack', { listener: e.listener });
    case 'syn-dropped':
      return w.say('event.syn_dropped', { packet: w.say('pkt.tcp'), why: why(e.why) });
    case 'rst':
      return w.say('event.rst');
    case 'datagram':
      return w.say('event.datagram', { n: e.n, at: at(e.listener, e.slot) });
    case 'datagram-dropped':
      return w.say('event.datagram_dropped', { n: e.n, why: why(e.why) });
  }
}

const PRESETS: readonly PresetId[] = ['workers', 'closeOne', 'fewClients', 'many', 'wildcard', 'reservoir', 'bpfCpu'];

/** The visualizer's words in a page language, from the catalogue (`ui.dispatch.*` of messages/*.json). */
function build(lang: Lang): DispatchText {
  const w = words(lang, 'dispatch');
  const tuple = <T extends string[]>(key: string, n: T['length']) => w.list(key, n) as T;
  const jain = (f: Fairness, digits: number) => (f.jain === null ? w.say('not_applicable') : f.jain.toFixed(digits));
  const plural = (key: 'moved_caption' | 'candidates', n: number, fields: Record<string, string | number>) =>
    w.say(`${key}.${n === 1 ? 'one' : 'other'}`, { n, ...fields });
  return {
    tour: w.say('tour'),
    tourTitle: w.say('tour_title'),
    tourStep: (i, n) => w.say('tour_step', { i, n }),
    tourNext: w.say('tour_next'),
    tourBack: w.say('tour_back'),
    tourClose: w.say('tour_close'),
    tourDone: w.say('tour_done'),
    tourStepTitle: (step, f) => tourWords(w, step, f)[0],
    tourSays: (step, f) => tourWords(w, step, f)[1],
    stallWorker: (label) => w.say('stall_worker', { label }),
    stalledWord: w.say('stalled_word'),
    serviceRate: w.say('service_rate'),
    serviceRateHint: w.say('service_rate_hint'),
    setRate: w.say('set_rate'),
    stallToggle: w.say('stall_toggle'),
    resumeToggle: w.say('resume_toggle'),
    serviceRateBad: w.say('service_rate_bad'),
    ratesBad: (given, lo, hi, max, entry, bad) =>
      w.say('rates_bad', { given, lo, hi, max, which: entry ? w.say('rates_bad_entry', { entry, bad }) : w.say('rates_bad_count', { bad }) }),
    workersHeading: w.say('workers_heading'),
    workersHead: tuple('workers_head', 5),
    workersCaption: (shown, all) => w.say('workers_caption', { part: shown < all ? w.say('workers_caption_part', { shown, all }) : '' }),
    rateOf: (x) => (x.stalled ? w.say('stalled_word') : x.rate === 1 ? w.say('rate_normal') : w.say('rate_times', { rate: x.rate })),
    settings: w.say('settings'),
    presetsLegend: w.say('presets_legend'),
    presets: w.record('presets', PRESETS),
    presetSays: w.record('preset_says', PRESETS),
    now: (v) => nowWords(w, v),
    stageLine: (e, marker) => w.say('stage_line', { seq: e.seq, kind: e.kind, marker }),
    stageLineUnselected: (e) =>
      e.kind === 'RST'
        ? w.say('stage_line_rst', { seq: e.seq, kind: e.kind })
        : w.say('stage_line_ehash', { seq: e.seq, kind: e.kind, listener: e.listener === null ? w.say('no_socket') : `L${e.listener}` }),
    keyboardPath: w.say('keyboard_path'),
    rateHint: (max) => w.say('rate_hint', { max }),
    lookupClosed: w.say('lookup_closed'),
    controls: (seq) => (seq > 1 ? w.say('controls_n', { seq }) : w.say('controls')),
    playback: w.say('playback'),
    play: w.say('play'),
    pause: w.say('pause'),
    stepBack: w.say('step_back'),
    stepForward: w.say('step_forward'),
    speed: w.say('speed'),
    rate: w.say('rate'),
    groupLegend: w.say('group_legend'),
    kernel: w.say('kernel'),
    proto: w.say('proto'),
    bound: w.say('bound'),
    bindOptions: tuple('bind_options', 2),
    listeners: w.say('listeners'),
    clients: w.say('clients'),
    cpus: w.say('cpus'),
    program: w.say('program'),
    programOptions: [
      ...w.list('program_options', 4),
      // The SK_REUSEPORT programs are named by the kernel's own words: the program type, what it returns, and the release it came in.
      ...(['SK_PASS', 'SK_DROP'] as const).map((action) => w.say('program_option_kernel', { type: 'SK_REUSEPORT', action, since: '4.19' })),
    ] as DispatchText['programOptions'],
    fixedIndex: w.say('fixed_index'),
    payloadModulus: w.say('payload_modulus'),
    seed: w.say('seed'),
    clientList: w.say('client_list'),
    applyRestart: w.say('apply_restart'),
    liveLegend: w.say('live_legend'),
    secret: w.say('secret'),
    setSecret: w.say('set_secret'),
    newBoot: w.say('new_boot'),
    addListener: w.say('add_listener'),
    listener: w.say('listener'),
    closeListener: w.say('close_listener'),
    setCpu: w.say('set_cpu'),
    clearCpu: w.say('clear_cpu'),
    movedSummary: w.say('moved_summary'),
    stage: w.say('stage'),
    shapes: w.say('shapes'),
    colourLegend: w.say('colour_legend'),
    perListener: w.say('per_listener'),
    eventList: w.say('event_list'),
    eventHead: w.list('event_head', 9),
    inspector: w.say('inspector'),
    inspectorHint: w.say('inspector_hint'),
    lookupHeading: w.say('lookup_heading'),
    lookupLayout: w.say('lookup_layout'),
    lookupScenes: tuple('lookup_scenes', 2),
    lookupHint: w.say('lookup_hint'),
    callRefused: (call, errno, why) => w.say('call_refused', { call, errno, why }),
    lookupRefused: (message) => w.say('lookup_refused', { message }),
    inspectEvent: (seq) => w.say('inspect_event', { seq }),
    none: w.say('none'),
    remap: (r, listening) =>
      w.say(listening === 0 ? 'remap.none' : 'remap.moved', { what: changeWords(lang, r.op, r.change), moved: r.moved.length, total: r.total }),
    movedCaption: (n, cap) => plural('moved_caption', n, { first: n > cap ? w.say('moved_first', { cap }) : '' }),
    movedHead: tuple('moved_head', 3),
    figures: (fr, dropped, closed, inFlight, ratio, longest) => {
      const lost = [closed && w.say('lost_closed', { n: closed }), dropped && w.say('lost_dropped', { n: dropped })].filter(Boolean).join(w.say('list_sep'));
      const values = [
        `${fr.total + dropped + closed}${lost ? w.say('lost', { parts: lost }) : ''}`,
        w.say('per_listener_expected', { x: fr.expected.toFixed(1) }),
        ratio,
        jain(fr, 4),
        String(inFlight),
        longest ? w.say('longest', { label: longest.label, queue: longest.queue }) : '0',
      ];
      return w.list('figures', 6).map((label, i) => [label, values[i]!] as [string, string]);
    },
    headline: (e, mark) => w.say('headline', { seq: e.seq, kind: e.kind, t: e.t.toFixed(3), what: eventWords(w, e.what), mark }),
    belongsTo: (e) => w.say('belongs_to', { kind: e.kind, conn: e.conn }),
    notDelivered: w.say('not_delivered'),
    ...replayWords(lang),
    // The tuple is the client's: a SYN-ACK goes to it, so the client is named as such, not as where the packet came from.
    step: (e) => w.say('step', { seq: e.seq, client: `${e.tuple.saddr}:${e.tuple.sport}`, what: eventWords(w, e.what) }),
    what: (e) => eventWords(w, e),
    wholeNumber: (name, lo, hi) => w.say('whole_number', { name, lo, hi }),
    badSetting: (given, allowed) => w.say('bad_setting', { given, allowed }),
    secretBad: w.say('secret_bad'),
    clientListErrors: (errs) => w.say('client_list_errors', { errors: errs.join(w.say('client_list_sep')) }),
    noClient: w.say('no_client'),
    tooManyClients: (line, max) => w.say('too_many_clients', { line, max }),
    cannotBuild: (message) => w.say('cannot_build', { message }),
    rateBad: (max) => w.say('rate_bad', { max }),
    chooseMember: w.say('choose_member'),
    cpuBad: w.say('cpu_bad'),
    fixedIndexName: w.say('fixed_index_name'),
    payloadModulusName: w.say('payload_modulus_name'),
    summary: (sim) => sim.describe(lang),
    notApplicable: w.say('not_applicable'),
    chartLabel: (f, ratio) => w.say('chart_label', { total: f.total, expected: f.expected.toFixed(1), ratio, jain: jain(f, 3) }),
    structure: structureWords(lang),
    marker: (e) => markerWords(lang, e),
    chainMarker: (hashHex, listener, listening) => chainMarkerWords(lang, hashHex, listener, listening),
    card: cardText(lang),
    noSocket: w.say('no_socket'),
    socket: (n) => w.say('socket', { n }),
    score: w.say('score'),
    more: (n) => w.say('more', { n }),
    lookupOf: (seq, any) => w.say('lookup_of', { seq, any: any ? w.say('lookup_of_any') : '' }),
    inspLookupRefused: (message) => w.say('insp_lookup_refused', { message }),
    liveDiffers: (answer) => w.say('live_differs', { answer }),
    inspLookup: (walks, reason, agree) => w.say('insp_lookup', { walks, reason, agree }),
    candidates: (caption, n) => plural('candidates', n, { caption }),
  };
}

/** "Your server, replayed" and the reservoir era's record, from the catalogue (`ui.dispatch.replay_*`, `chain_record`). */
function replayWords(lang: Lang): Pick<DispatchText, ReplayWord> {
  const w = words(lang, 'dispatch');
  const listener = (l: number | null) => (l === null ? w.say('marker_none') : `L${l}`);
  return {
    chainRecord: w.say('chain_record'),
    replayLegend: w.say('replay_legend'),
    replayHint: w.say('replay_hint'),
    replayFile: w.say('replay_file'),
    replayStop: w.say('replay_stop'),
    replayStatus: (name, release, key, x) =>
      w.say('replay_status', {
        name,
        release,
        sent: w.num(x.sent),
        records: w.num(x.records),
        model:
          key === null
            ? w.say('replay_no_key')
            : w.say('replay_agreement', {
                key: hex32(key),
                agreed: w.num(x.agreed),
                differs: w.num(x.disagreed.length),
                hash: x.hashDiffers.length ? w.say('replay_hash_differs', { n: w.num(x.hashDiffers.length) }) : '',
              }),
      }),
    replayDiffers: (r, n) =>
      w.count('replay_differs', n, { records: r.join(w.say('replay_sep')), more: n > r.length ? w.say('replay_more', { n: w.num(n - r.length) }) : '' }),
    replayCheck: (c) =>
      c.model === undefined ? w.say('replay_unasked') : c.model === c.kernel ? w.say('replay_agrees') : w.say('replay_says', { listener: listener(c.model) }),
    replayFetch: (url, why) => w.say('replay_fetch', { url, why }),
    replayInvalid: (name, why) => w.say('replay_invalid', { name, why }),
    replayRefused: (name, field, problem) => w.say(`replay_refused.${problem}` as WidgetKey<'dispatch'>, { name, field }),
    replayTooBig: (name, mib, max) => w.say('replay_too_big', { name, size: mib.toFixed(1), max }),
    replayFileBad: (given) => w.say('replay_file_bad', { given }),
  };
}

/** The words {@link replayWords} says. */
type ReplayWord =
  | 'chainRecord'
  | 'replayLegend'
  | 'replayHint'
  | 'replayFile'
  | 'replayStop'
  | 'replayStatus'
  | 'replayDiffers'
  | 'replayCheck'
  | 'replayFetch'
  | 'replayInvalid'
  | 'replayRefused'
  | 'replayTooBig'
  | 'replayFileBad';

/** The scene's column headings, from the catalogue (`ui.dispatch.head_*`). */
function structureWords(lang: Lang): StructureText {
  const w = words(lang, 'dispatch');
  return {
    clients: (n) => w.say('head_clients', { n }),
    hashBands: (n) => w.say('head_hash_bands', { n }),
    hashReservoir: w.say('head_hash_reservoir'),
    noSocks: w.say('head_no_socks'),
    listeners: w.say('head_listeners'),
    stalled: w.say('stalled_tag'),
  };
}

/** A selection path in the marker's few words (the numbers and kernel names as they are). */
function pickWords(lang: Lang, p: SelectionPath): string {
  const w = words(lang, 'dispatch');
  if (p.kind === 'by_hash') return w.say('marker_slot', { n: p.numSocks, product: p.productHex, slot: p.scaled });
  if (p.kind === 'program') {
    const program = say(lang, 'program_summary', p.program);
    const returned = say(lang, 'program_return', p.returned);
    return p.then ? w.say('marker_then', { program, returned, next: pickWords(lang, p.then) }) : w.say('marker_program', { program, returned });
  }
  return w.say('marker_reservoir', { n: p.steps.length + p.omitted });
}

function markerWords(lang: Lang, e: Explain): string {
  const w = words(lang, 'dispatch');
  return w.say('marker', { hash: e.hash.hashHex, pick: pickWords(lang, e.pick), listener: e.listener === null ? w.say('marker_none') : `L${e.listener}` });
}

function chainMarkerWords(lang: Lang, hashHex: string, listener: number | null, listening: number): string {
  const w = words(lang, 'dispatch');
  return w.say('marker', {
    hash: hashHex,
    pick: w.say('marker_reservoir', { n: listening }),
    listener: listener === null ? w.say('marker_none') : `L${listener}`,
  });
}

const en = build('en');
const zh = build('zh-CN');

/** The words for the page's language. */
export function dispatchText(lang = document.documentElement.lang): DispatchText {
  return langOf(lang) === 'zh-CN' ? zh : en;
}

/** Both languages, for tests. */
export const DISPATCH_TEXT = { en, zh } as const;
