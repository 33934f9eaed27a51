/**
 * The dispatch visualizer's interface words, once per language (chosen from the page's `lang`). One file on purpose:
 * two tables of words side by side, English and Chinese, data per language with no logic to split.
 */
import { langOf, say, words, type Lang, type WidgetKey } from '../model/messages';
import type { Explain, SelectionPath } from '../model/index';
import type { DispatchEvent, EventWhat, NoTaker } from '../scene/dispatch/events';
import { remapPhrase, type DispatchSim, type Remap } from '../scene/dispatch/sim';
import type { StructureText } from '../scene/dispatch/structure';
import type { ExplainCardText } from '../render/explain-card';
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

/** The parts of a dispatched count that went nowhere: those given (non-zero), joined. */
const lost = (closed: string | 0, dropped: string | 0, sep: string): string => [closed, dropped].filter(Boolean).join(sep);

function enNow(v: NowView): string {
  const pkt = v.udp ? 'datagram' : 'SYN';
  const state = v.offscreen ? 'Paused while the scene is off-screen. ' : v.playing ? '' : 'Paused. ';
  if (v.listening === 0) return `${state}No listener is left on port ${v.port}: every ${v.udp ? 'datagram is dropped' : 'SYN gets a RST'}.`;
  if (!v.group)
    return `${state}Kernel ${v.kernel} has no socks[] yet: for each ${pkt} it scans the ${v.listening} listeners and keeps one by hash (reservoir sampling).`;
  const pick = v.program ? 'a BPF program on the group returns the slot' : `its 4-tuple hash, scaled to ${v.listening} bands, picks a slot of socks[]`;
  return (
    `${state}${v.clients} clients send ${pkt}s to ${v.listening} listeners sharing port ${v.port}: for each ${pkt}, ${pick}, and that slot's listener ` +
    `takes it.`
  );
}

function enTour(step: TourStep, f: TourFacts): [string, string] {
  const pkt = f.udp ? 'datagram' : 'SYN';
  const L = f.listener ?? 'no listener';
  switch (step) {
    case 'hash':
      return [
        'The hash',
        `The kernel hashes each ${pkt}'s 4-tuple (source address and port, destination address and port) with a secret drawn at boot. The result is a ` +
          `32-bit number: this ${pkt}'s is 0x${f.hashHex}, marked on the range from 0 to 2³².`,
      ];
    case 'slot':
      if (f.pick === 'reservoir')
        return [
          'No slot: the reservoir scan',
          `Kernel ${f.kernel} has no slots: it walks the listeners in chain order and keeps one by hash (reservoir sampling), so the range has no bands.`,
        ];
      if (f.pick === 'program')
        return [
          'The slot, from a program',
          `A BPF program attached to the group returns the slot itself (slot ${f.slot ?? 'none'} for this ${pkt}); the hash does not pick. The ` +
            `inspector below shows what the program returned.`,
        ];
      return [
        'The slot: reciprocal_scale',
        `reciprocal_scale(hash, N) multiplies the hash by N, the number of listening sockets, and keeps the top 32 bits: 0x${f.hashHex} × ${f.n} = ` +
          `0x${f.productHex}, >> 32 = ${f.slot}. That cuts the range into ${f.n} equal bands, and this hash lies in band ${f.slot}.`,
      ];
    case 'socks':
      if (f.pick === 'reservoir')
        return [
          'No socks[] yet',
          `Before kernel 4.6 there is no socks[] array: the listeners sit on a chain, and #i is a position on it. ${L} was kept for this ${pkt}.`,
        ];
      return [
        'socks[]',
        `The group keeps its listening sockets in an array, socks[], in the order they joined: ${f.n} of ${f.maxSocks} slots are used. Slot ${f.slot} ` +
          `holds ${L}. Closing a member moves the last one into the freed slot, and N shrinks by one, which is why a close moves so many flows.`,
      ];
    case 'listener':
      return [
        'The chosen listener',
        `${L} takes the ${pkt}. Every ${pkt} with the same 4-tuple hashes to the same value, so this client's connections all land on ${L} until the ` +
          `group or the secret changes. The kernel never looks at how busy ${L} is.`,
      ];
    case 'queue':
      return [
        'The accept queue',
        `After the handshake the connection waits in ${L}'s accept queue (the grey bar, ${f.queue} waiting now) until its worker calls accept(). Here ` +
          `each worker takes ${f.headroom} times its fair share of arrivals per second, times its service rate (Settings).`,
      ];
    default:
      return [
        'A stalled worker',
        `${f.stalled ?? L}'s worker is stalled${f.tourStalled ? ' (the tour stalled it, and resumes it when the tour closes)' : ''}: it accepts ` +
          `nothing. The hash keeps sending it its share, so its queue grows for as long as it is stalled (${f.stalledQueue} waiting; the striped bar, ` +
          `and its label reads ×0). In the kernel a full queue drops the SYN and counts it in ListenOverflows; this widget draws no limit.`,
      ];
  }
}

/** Why nothing took a packet, in English: the model's fallback, its error, or "no socket". */
const enWhy = (why: NoTaker): string => (why === null ? 'no socket' : 'fallback' in why ? say('en', 'fallback', why.fallback) : why.error);
const enAt = (l: number, slot: number | null): string => `listener ${l}${slot === null ? '' : ` (socks[${slot}])`}`;

function enEvent(w: EventWhat): string {
  switch (w.kind) {
    case 'syn':
      return `SYN to ${enAt(w.listener, w.slot)}`;
    case 'syn-ack':
      return `SYN-ACK from listener ${w.listener}`;
    case 'ack':
      return `ACK to listener ${w.listener}'s request socket (found in ehash, no reuseport selection)`;
    case 'syn-dropped':
      return `SYN: ${enWhy(w.why)}`;
    case 'rst':
      return 'RST back to the client: no listener took the SYN';
    case 'datagram':
      return `datagram ${w.n} (payload ${w.n}) to ${enAt(w.listener, w.slot)}`;
    case 'datagram-dropped':
      return `datagram ${w.n} dropped: ${enWhy(w.why)}`;
  }
}

const en: DispatchText = {
  tour: 'Take the tour',
  tourTitle: 'Tour of the scene',
  tourStep: (i, n) => `Step ${i} of ${n}`,
  tourNext: 'Next',
  tourBack: 'Back',
  tourClose: 'Close the tour',
  tourDone: 'Done',
  tourStepTitle: (step, f) => enTour(step, f)[0],
  tourSays: (step, f) => enTour(step, f)[1],
  stallWorker: (l) => `Stall worker ${l}`,
  stalledWord: 'stalled',
  serviceRate: 'Service rate (× normal)',
  serviceRateHint: '0.1 to 4 for the listener chosen above; 1 accepts 1.2 times its fair share.',
  setRate: 'Set rate',
  stallToggle: 'Stall worker',
  resumeToggle: 'Resume worker',
  serviceRateBad: 'Service rate: give a number from 0.1 to 4.',
  ratesBad: (given, lo, hi, max, entry, bad) =>
    `${given} was not used: rates takes up to ${max} numbers from ${lo} to ${hi}, separated by commas ` +
    `(${entry ? `entry ${entry}, "${bad}", is not one` : `it has ${bad} entries`}); every worker keeps the normal rate.`,
  workersHeading: 'Workers',
  workersHead: ['worker', 'rate', 'sent', 'accepted', 'queued'],
  workersCaption: (shown, all) =>
    `Per listener: connections the hash sent it, its worker accepted, and waiting in its ` +
    `queue${shown < all ? ` (${shown} of ${all}: the first in slot order, and every stalled or slowed one)` : ''}.`,
  rateOf: (w) => (w.stalled ? 'stalled' : w.rate === 1 ? 'normal' : `×${w.rate}`),
  settings: 'Settings',
  presetsLegend: 'Presets (each restarts the run)',
  presets: {
    workers: '8 workers',
    closeOne: 'close one',
    fewClients: 'few clients',
    many: '130 listeners',
    wildcard: 'wildcard vs specific',
    reservoir: '3.9 reservoir',
    bpfCpu: 'BPF by CPU',
  },
  presetSays: {
    workers: 'Eight listeners share the port, and the hash spreads clients over them about evenly.',
    closeOne:
      'Listener 3 closes; the last member of socks[] slides into its slot, and with the hash range now cut into 7 bands, most flows land on another listener.',
    fewClients: 'With a dozen clients each one is labelled, and the spread is visibly uneven.',
    many: 'The 129th member grows socks[] from 128 to 256 slots.',
    wildcard: 'Bound to 0.0.0.0; the Listener lookup panel shows why a specific address outscores a wildcard one.',
    reservoir: 'Kernel 3.9 has no socks[]: it walks the chain and keeps one listener by hash.',
    bpfCpu: 'A BPF program returns the receiving CPU as the slot, so each CPU feeds one listener.',
  },
  now: enNow,
  stageLine: (e, m) => `Event ${e.seq} (${e.kind}): ${m}`,
  stageLineUnselected: (e) =>
    `Event ${e.seq} (${e.kind}): ` +
    (e.kind === 'RST'
      ? 'sent back to the client, no listener took the SYN'
      : `no reuseport selection (found in ehash) → ${e.listener === null ? 'no socket' : `L${e.listener}`}`),
  keyboardPath: 'Keyboard: every packet is a row of the event list below; its button opens the record.',
  rateHint: (max) => `1 to ${max}: higher rates ask the model about more connections than a frame has time for.`,
  lookupClosed: 'Open the Listener lookup panel below to see the tables the kernel walked for this packet.',
  controls: (seq) => (seq > 1 ? `Visualizer controls (${seq})` : 'Visualizer controls'),
  playback: 'Playback',
  play: 'Play',
  pause: 'Pause',
  stepBack: 'Step back',
  stepForward: 'Step forward',
  speed: 'Speed',
  rate: 'Arrival rate (per simulated second)',
  groupLegend: 'Group (changing these restarts the run)',
  kernel: 'Kernel profile',
  proto: 'Protocol',
  bound: 'Bound address',
  bindOptions: ['10.0.0.1 (specific)', '0.0.0.0 (wildcard)'],
  listeners: 'Listeners',
  clients: 'Clients',
  cpus: 'Receiving CPUs',
  program: 'Group program (BPF)',
  programOptions: [
    'none (select by hash)',
    'index = receiving CPU',
    'fixed index',
    'index = payload word mod N (datagram k carries k)',
    'SK_REUSEPORT: SK_PASS (4.19+)',
    'SK_REUSEPORT: SK_DROP (4.19+)',
  ],
  fixedIndex: 'Fixed index returned',
  payloadModulus: 'Payload modulus N',
  seed: 'Seed',
  clientList: 'Client list (optional: ADDR PORT per line, IPv4; empty = generated clients)',
  applyRestart: 'Apply and restart',
  liveLegend: 'Live changes',
  secret: 'Hash secret (IPv4)',
  setSecret: 'Set secret',
  newBoot: 'New boot',
  addListener: 'Add listener',
  listener: 'Listener',
  closeListener: 'Close listener',
  setCpu: 'Set CPU',
  clearCpu: 'Clear CPU',
  movedSummary: 'Flows that land elsewhere after the last change',
  stage: 'Animated scene (the event list below holds the same packets)',
  shapes: 'Packet shapes',
  colourLegend:
    'colour: listener (Okabe-Ito; hollow marks for listeners 8–15, 24–31, …; black: no socket, or, under a payload program, no single listener per client)',
  perListener: 'Connections per listener',
  eventList: 'Event list',
  eventHead: ['#', 'time (s)', 'packet', 'client', 'CPU', 'listener', 'slot', 'hash', 'what'],
  inspector: 'Inspector',
  inspectorHint: 'Pause and step, click a packet, or choose an event row to see the model’s whole record.',
  lookupHeading: 'Listener lookup',
  lookupLayout: 'Lookup layout',
  lookupScenes: ['the visualized group', 'several groups: 0.0.0.0, :: and 127.0.0.1 (reuseport_addr_any)'],
  lookupHint: 'Inspect a packet to see the tables the kernel walked, every candidate socket’s compute_score, and the group’s pick.',
  callRefused: (call, errno, why) => `The kernel refused ${call}() with ${errno}: ${why}`,
  lookupRefused: (m) => `The model refuses this layout: ${m}`,
  inspectEvent: (s) => `Inspect event ${s}`,
  none: 'none',
  remap: (r, listening) =>
    listening === 0
      ? `${r.what}: ${remapPhrase(r, 0)}.`
      : `${r.what}: ${r.moved.length} of ${r.total} client flows now land on another listener (the model's answers for the same flows before and after; ` +
        `moved clients are ringed in black).`,
  movedCaption: (n, cap) => `${n} moved flow${n === 1 ? '' : 's'}${n > cap ? ` (first ${cap} shown)` : ''}`,
  movedHead: ['client', 'before', 'after'],
  figures: (fr, dropped, closed, inFlight, ratio, longest) => [
    [
      'Dispatched',
      `${fr.total + dropped + closed}` +
        (dropped || closed ? ` (${lost(closed && `${closed} to closed listeners`, dropped && `${dropped} to no socket`, ', ')})` : ''),
    ],
    ['Uniform expectation', `${fr.expected.toFixed(1)} per listener`],
    ['Max / min', ratio],
    ['Jain’s index', fr.jain === null ? 'n/a' : fr.jain.toFixed(4)],
    ['In flight', String(inFlight)],
    ['Longest queue', longest ? `${longest.label}: ${longest.queue}` : '0'],
  ],
  headline: (e, m) => `Event ${e.seq}: ${e.kind} at ${e.t.toFixed(3)} s, ${enEvent(e.what)}. Listener mark: ${m}.`,
  belongsTo: (e) => `This ${e.kind} belongs to connection ${e.conn}; the record below is its SYN's dispatch.`,
  notDelivered: 'The model did not deliver this packet to the group.',
  ...replayWords('en'),
  // The tuple is the client's: a SYN-ACK goes to it, so the client is named as such, not as where the packet came from.
  step: (e) => `Event ${e.seq} (client ${e.tuple.saddr}:${e.tuple.sport}): ${enEvent(e.what)}.`,
  what: enEvent,
  wholeNumber: (n, lo, hi) => `${n}: give a whole number from ${lo} to ${hi}.`,
  badSetting: (given, allowed) => `${given} was not used (${allowed}); the default stands.`,
  secretBad: 'Hash secret: give a 32-bit hex value such as 0x1a2b3c4d.',
  clientListErrors: (errs) => `Client list: ${errs.join('; ')}`,
  noClient: 'Client list: no client given.',
  tooManyClients: (line, max) => `Client list: at most ${max} clients; line ${line} is one more. Shorten the list.`,
  cannotBuild: (m) => `The group cannot be built: ${m}`,
  rateBad: (max) => `Arrival rate: give a number from 1 to ${max}.`,
  chooseMember: 'Choose a listening member to close.',
  cpuBad: 'SO_INCOMING_CPU: give a whole number from 0.',
  fixedIndexName: 'Fixed index',
  payloadModulusName: 'Payload modulus',
  summary: (sim) => sim.describe(),
  notApplicable: 'n/a',
  chartLabel: (f, ratio) =>
    `Connections per listener: ${f.total} in all, expected ${f.expected.toFixed(1)} each if the hash were uniform; max/min ${ratio}; Jain ` +
    `${f.jain === null ? 'n/a' : f.jain.toFixed(3)}`,
  structure: structureWords('en'),
  marker: (e) => markerWords('en', e),
  chainMarker: (hashHex, listener, listening) => chainMarkerWords('en', hashHex, listener, listening),
  card: { kernel: (s) => `Kernel: ${s}`, fallback: (s) => `Fallback: ${s}`, caveats: 'Caveats' },
  noSocket: 'no socket',
  socket: (n) => `socket ${n}`,
  score: 'score',
  more: (n) => `+${n} more`,
  lookupOf: (seq, any) => `Lookup of event ${seq}${any ? ' (several groups, to 127.0.0.1:8888)' : ''}`,
  inspLookupRefused: (m) => `Listener lookup: the model refuses this layout: ${m}`,
  liveDiffers: (a) =>
    ` When it was sent it went to ${a}; the server has changed since (a close, a new listener or a new secret), ` +
    'and this lookup is of the server as it is now.',
  inspLookup: (walks, reason, agree) => `Listener lookup (Host model): ${walks}. ${reason}.${agree} The Listener lookup panel lists every candidate and score.`,
  candidates: (c, n) => `${c}, ${n} candidate${n === 1 ? '' : 's'}`,
};

function zhSummary(sim: DispatchSim): string {
  const s = sim.summary();
  const o = sim.opts;
  const inflight = sim.particles.inFlight(sim.time);
  const parts = [
    `内核 ${o.kernel} 上的 ${o.proto.toUpperCase()} 组，绑定到 ${s.bind}:${s.port}，${s.listening} 个成员正在监听`,
    s.selection === 'group' ? `socks[] 容量 ${s.maxSocks}` : '尚未建组（蓄水池扫描）',
    `${sim.clients.length} 个客户端`,
    `迄今 ${sim.conns} 个${o.proto === 'udp' ? '数据报' : '连接'}，${inflight} 个在途`,
  ];
  if (sim.dropped) parts.push(`${sim.dropped} 个没有找到套接字`);
  const odd = sim.unusualWorkers();
  if (odd.length)
    parts.push(
      odd
        .map(
          (w) =>
            `工作进程 L${w.listener} ${w.stalled ? '卡住' : `以 ${w.rate} 倍速率服务`}，队列中 ${Math.floor(w.queue)} 个，已接受 ${Math.floor(w.accepted)} 个`,
        )
        .join('，'),
    );
  if (sim.lastRemap)
    parts.push(
      s.listening === 0
        ? `${zhWhat(sim.lastRemap)}：已没有监听套接字，全部 ${sim.lastRemap.total} 个流无处可去`
        : `${zhWhat(sim.lastRemap)}：${sim.lastRemap.total} 个流中有 ${sim.lastRemap.moved.length} 个改落到另一个监听套接字`,
    );
  return `${parts.join('；')}。`;
}

/** The last change in Chinese words, from the model's record of it. */
function zhWhat(r: Remap): string {
  const { op, change: c } = r;
  if (op.op === 'join') {
    if (c?.kind !== 'joined') return '一个监听套接字加入';
    const eff =
      c.effect.kind === 'grew'
        ? `；socks[] 从 ${c.effect.from} 个槽位扩到 ${c.effect.to} 个`
        : c.effect.kind === 'evicted_closed'
          ? `；已关闭的监听套接字 ${c.effect.listener} 被移出`
          : '';
    return `监听套接字 ${c.listener} 加入${c.slot !== null ? `，位于 socks[${c.slot}]` : ''}${eff}`;
  }
  if (op.op === 'close') {
    let w = `监听套接字 ${op.listener} 已关闭`;
    if (c?.kind === 'left' && c.slot !== null)
      w += c.moved !== null ? `；监听套接字 ${c.moved} 从最后一个槽位移入 socks[${c.slot}]` : `；它本来就在最后一个槽位 socks[${c.slot}]`;
    return w;
  }
  if (op.op === 'cpu')
    return op.cpu === undefined ? `清除了监听套接字 ${op.listener} 的 SO_INCOMING_CPU` : `为监听套接字 ${op.listener} 设置 SO_INCOMING_CPU ${op.cpu}`;
  return `新的哈希密钥 0x${(op.secret >>> 0).toString(16).padStart(8, '0')}`;
}

function zhNow(v: NowView): string {
  const pkt = v.udp ? '数据报' : 'SYN';
  const state = v.offscreen ? '场景不在屏幕内，已暂停。' : v.playing ? '' : '已暂停。';
  if (v.listening === 0) return `${state}端口 ${v.port} 上已没有监听套接字：${v.udp ? '每个数据报都被丢弃' : '每个 SYN 都会收到 RST'}。`;
  if (!v.group) return `${state}内核 ${v.kernel} 还没有 socks[]：对每个 ${pkt}，它遍历 ${v.listening} 个监听套接字，按哈希保留其中一个（蓄水池抽样）。`;
  const pick = v.program ? '组上挂载的 BPF 程序返回槽位' : `其四元组哈希按 ${v.listening} 段缩放后选中 socks[] 的一个槽位`;
  return `${state}${v.clients} 个客户端向共享端口 ${v.port} 的 ${v.listening} 个监听套接字发送 ${pkt}：对每个 ${pkt}，${pick}，由该槽位的监听套接字接收。`;
}

function zhTour(step: TourStep, f: TourFacts): [string, string] {
  const pkt = f.udp ? '数据报' : 'SYN';
  const L = f.listener ?? '（没有监听套接字）';
  switch (step) {
    case 'hash':
      return [
        '哈希',
        `内核用开机时随机生成的密钥，对每个 ${pkt} 的四元组（源地址、源端口、目的地址、目的端口）计算哈希，得到一个 32 位整数。这个 ${pkt} 的哈希是 0x${f.hashHex}，标在 0 到 2³² 的范围上。`,
      ];
    case 'slot':
      if (f.pick === 'reservoir')
        return ['没有槽位：蓄水池扫描', `内核 ${f.kernel} 还没有槽位：它按链表顺序遍历各监听套接字，按哈希保留其中一个（蓄水池抽样），所以哈希范围不分段。`];
      if (f.pick === 'program')
        return ['由程序给出槽位', `组上挂载的 BPF 程序直接返回槽位（这个 ${pkt} 是槽位 ${f.slot ?? '无'}），哈希不参与选择。程序返回了什么，见下方检查器。`];
      return [
        '槽位：reciprocal_scale',
        `reciprocal_scale(hash, N) 把哈希乘以 N（正在监听的套接字数），取结果的高 32 位：0x${f.hashHex} × ${f.n} = 0x${f.productHex}，>> 32 = ${f.slot}。这相当于把哈希范围等分成 ${f.n} ` +
          `段（从 0 起编号），这个哈希落在编号为 ${f.slot} 的那一段。`,
      ];
    case 'socks':
      if (f.pick === 'reservoir')
        return ['还没有 socks[]', `4.6 之前的内核没有 socks[] 数组：监听套接字挂在一条链表上，#i 表示链表中的位置。这个 ${pkt} 最终留给了 ${L}。`];
      return [
        'socks[]',
        `组把正在监听的套接字按加入顺序存放在数组 socks[] 中：${f.maxSocks} 个槽位用了 ${f.n} 个。槽位 ${f.slot} 里是 ${L}。关闭一个成员时，最后一个成员会移进空出的槽位，N 也减一，所以一次关闭会让很多流换到别的监听套接字。`,
      ];
    case 'listener':
      return [
        '选中的监听套接字',
        `这个 ${pkt} 交给 ${L}。四元组相同的 ${pkt} 哈希值也相同，所以只要组和密钥不变，这个客户端的连接都会落到 ${L}。内核从不考虑 ${L} 有多忙。`,
      ];
    case 'queue':
      return [
        '全连接队列',
        `三次握手完成后，连接进入 ${L} 的全连接队列（灰色条），等它的工作进程调用 accept() 取走；现在有 ${f.queue} 个在等。这里每个工作进程每秒取走的连接数，是它公平份额的 ${f.headroom} 倍再乘以它的服务速率（见“设置”）。`,
      ];
    default:
      return [
        '卡住的工作进程',
        `${f.stalled ?? L} 的工作进程卡住了${f.tourStalled ? '（是导览把它卡住的，关闭导览时会恢复）' : ''}，一个连接也不接受。哈希照样把它那一份连接送过来，所以只要它还卡着，队列就一直变长（现有 ${f.stalledQueue} ` +
          `个在等：条纹条，标签写着“卡住”）。真实内核里，队列满了以后新的 SYN 会被丢弃，并计入 ListenOverflows；这个组件没有画出这个上限。`,
      ];
  }
}

/** Why nothing took a packet, in Chinese (the model's error message stays as it came). */
const zhWhy = (why: NoTaker): string => (why === null ? '没有套接字' : 'fallback' in why ? say('zh-CN', 'fallback', why.fallback) : why.error);
const zhAt = (l: number, slot: number | null): string => `监听套接字 ${l}${slot === null ? '' : `（socks[${slot}]）`}`;

function zhEvent(w: EventWhat): string {
  switch (w.kind) {
    case 'syn':
      return `SYN 交给${zhAt(w.listener, w.slot)}`;
    case 'syn-ack':
      return `监听套接字 ${w.listener} 回复 SYN-ACK`;
    case 'ack':
      return `ACK 交给监听套接字 ${w.listener} 的请求套接字（在 ehash 中找到，不经过 reuseport 选择）`;
    case 'syn-dropped':
      return `SYN：${zhWhy(w.why)}`;
    case 'rst':
      return '向客户端回 RST：没有监听套接字接收该 SYN';
    case 'datagram':
      return `第 ${w.n} 个数据报（载荷 ${w.n}）交给${zhAt(w.listener, w.slot)}`;
    case 'datagram-dropped':
      return `第 ${w.n} 个数据报被丢弃：${zhWhy(w.why)}`;
  }
}

const zh: DispatchText = {
  tour: '开始导览',
  tourTitle: '场景导览',
  tourStep: (i, n) => `第 ${i} 步，共 ${n} 步`,
  tourNext: '下一步',
  tourBack: '上一步',
  tourClose: '关闭导览',
  tourDone: '完成',
  tourStepTitle: (step, f) => zhTour(step, f)[0],
  tourSays: (step, f) => zhTour(step, f)[1],
  stallWorker: (l) => `卡住工作进程 ${l}`,
  stalledWord: '卡住',
  serviceRate: '服务速率（正常值的倍数）',
  serviceRateHint: '对上面选中的监听套接字设置 0.1 到 4；1 表示每秒接受其公平份额的 1.2 倍。',
  setRate: '设置速率',
  stallToggle: '卡住工作进程',
  resumeToggle: '恢复工作进程',
  serviceRateBad: '服务速率：请输入 0.1 到 4 之间的数。',
  ratesBad: (given, lo, hi, max, entry, bad) =>
    `${given} 未被采用：rates 最多接受 ${max} 个 ${lo} 到 ${hi} 之间的数，以逗号分隔（${entry ? `第 ${entry} 项“${bad}”不符合` : `实际有 ${bad} 项`}）；所有工作进程保持正常速率。`,
  workersHeading: '工作进程',
  workersHead: ['工作进程', '速率', '分到', '已接受', '排队中'],
  workersCaption: (shown, all) =>
    `每个监听套接字：哈希分给它的连接数、其工作进程已接受的连接数、队列中等待的连接数${shown < all ? `（显示 ${all} 个中的 ${shown} 个：按槽位顺序的前若干个，以及所有卡住或减速的）` : ''}。`,
  rateOf: (w) => (w.stalled ? '卡住' : w.rate === 1 ? '正常' : `${w.rate} 倍`),
  settings: '设置',
  presetsLegend: '预设（每个都会重新开始运行）',
  presets: {
    workers: '8 个工作进程',
    closeOne: '关闭一个',
    fewClients: '少量客户端',
    many: '130 个监听套接字',
    wildcard: '通配地址与指定地址',
    reservoir: '3.9 蓄水池',
    bpfCpu: '按 CPU 的 BPF',
  },
  presetSays: {
    workers: '八个监听套接字共享端口，哈希把客户端大致均匀地分给它们。',
    closeOne: '关闭监听套接字 3；socks[] 的最后一个成员滑入它的槽位，哈希范围改为 7 段，大多数流都改落到另一个监听套接字。',
    fewClients: '只有十几个客户端时，每个都标出地址，分布明显不均。',
    many: '第 129 个成员加入时，socks[] 从 128 个槽位扩到 256 个。',
    wildcard: '绑定到 0.0.0.0；“监听套接字查找”面板说明为什么指定地址的得分高于通配地址。',
    reservoir: '内核 3.9 没有 socks[]：它遍历链表，按哈希保留一个监听套接字。',
    bpfCpu: 'BPF 程序把接收 CPU 作为槽位返回，于是每个 CPU 只送往一个监听套接字。',
  },
  now: zhNow,
  stageLine: (e, m) => `第 ${e.seq} 个事件（${e.kind}）：${m}`,
  stageLineUnselected: (e) =>
    `第 ${e.seq} ` +
    `个事件（${e.kind}）：${e.kind === 'RST' ? '发回客户端，没有监听套接字接收该 SYN' : `不经过 reuseport 选择（在 ehash 中找到）→ ${e.listener === null ? '没有套接字' : `L${e.listener}`}`}`,
  keyboardPath: '键盘操作：每个数据包都是下方事件列表中的一行，行首按钮可打开其记录。',
  rateHint: (max) => `1 到 ${max}：速率更高时，每帧需要向模型查询的连接数超出一帧的时间。`,
  lookupClosed: '展开下方的“监听套接字查找”面板，即可查看内核为这个数据包遍历的表。',
  controls: (seq) => (seq > 1 ? `可视化控制（${seq}）` : '可视化控制'),
  playback: '播放控制',
  play: '播放',
  pause: '暂停',
  stepBack: '单步后退',
  stepForward: '单步前进',
  speed: '速度',
  rate: '到达速率（每模拟秒）',
  groupLegend: '组（修改这些设置会重新开始运行）',
  kernel: '内核配置档',
  proto: '协议',
  bound: '绑定地址',
  bindOptions: ['10.0.0.1（指定地址）', '0.0.0.0（通配地址）'],
  listeners: '监听套接字数',
  clients: '客户端数',
  cpus: '接收 CPU 数',
  program: '组程序（BPF）',
  programOptions: [
    '无（按哈希选择）',
    '索引 = 接收 CPU',
    '固定索引',
    '索引 = 载荷字 mod N（第 k 个数据报携带 k）',
    'SK_REUSEPORT：SK_PASS（4.19+）',
    'SK_REUSEPORT：SK_DROP（4.19+）',
  ],
  fixedIndex: '返回的固定索引',
  payloadModulus: '载荷模数 N',
  seed: '随机种子',
  clientList: '客户端列表（可选：每行一个 ADDR PORT，仅 IPv4；留空则使用生成的客户端）',
  applyRestart: '应用并重新开始',
  liveLegend: '实时修改',
  secret: '哈希密钥（IPv4）',
  setSecret: '设置密钥',
  newBoot: '模拟重新开机',
  addListener: '添加监听套接字',
  listener: '监听套接字',
  closeListener: '关闭监听套接字',
  setCpu: '设置 CPU',
  clearCpu: '清除 CPU',
  movedSummary: '上次修改后改落到别处的流',
  stage: '动画场景（下方事件列表包含同样的数据包）',
  shapes: '数据包形状',
  colourLegend: '颜色：监听套接字（Okabe-Ito 配色；监听套接字 8–15、24–31……为空心标记；黑色：没有套接字，或在载荷程序下，某客户端没有唯一的监听套接字）',
  perListener: '各监听套接字的连接数',
  eventList: '事件列表',
  eventHead: ['序号', '时间（秒）', '数据包', '客户端', 'CPU', '监听套接字', '槽位', '哈希', '说明'],
  inspector: '检查器',
  inspectorHint: '暂停后单步执行、点击一个数据包，或选择事件列表中的一行，即可查看模型的完整记录。',
  lookupHeading: '监听套接字查找',
  lookupLayout: '查找布局',
  lookupScenes: ['可视化中的这个组', '多个组：0.0.0.0、:: 和 127.0.0.1（reuseport_addr_any）'],
  lookupHint: '检查一个数据包，即可看到内核遍历的表、每个候选套接字的 compute_score，以及组的选择。',
  callRefused: (call, errno, why) => `内核以 ${errno} 拒绝了 ${call}()：${why}`,
  lookupRefused: (m) => `模型拒绝此布局：${m}`,
  inspectEvent: (s) => `检查第 ${s} 个事件`,
  none: '无',
  remap: (r, listening) =>
    listening === 0
      ? `${zhWhat(r)}：已没有监听套接字，全部 ${r.total} 个客户端流无处可去（SYN 收到 RST，数据报被丢弃）。`
      : `${zhWhat(r)}：${r.total} 个客户端流中有 ${r.moved.length} 个改落到另一个监听套接字（依据模型对同一批流在修改前后的回答；移动的客户端以黑框标出）。`,
  movedCaption: (n, cap) => `${n} 个移动的流${n > cap ? `（仅显示前 ${cap} 个）` : ''}`,
  movedHead: ['客户端', '修改前', '修改后'],
  figures: (fr, dropped, closed, inFlight, ratio, longest) => [
    [
      '已分发',
      `${fr.total + dropped + closed}` +
        (dropped || closed ? `（${lost(closed && `${closed} 个发往已关闭的监听套接字`, dropped && `${dropped} 个没有套接字`, '，')}）` : ''),
    ],
    ['均匀分布期望', `每个监听套接字 ${fr.expected.toFixed(1)} 个`],
    ['最大 / 最小', ratio],
    ['Jain 指数', fr.jain === null ? '不适用' : fr.jain.toFixed(4)],
    ['在途', String(inFlight)],
    ['最长队列', longest ? `${longest.label}：${longest.queue}` : '0'],
  ],
  headline: (e, m) => `第 ${e.seq} 个事件：${e.kind}，时间 ${e.t.toFixed(3)} 秒，${zhEvent(e.what)}。监听套接字标记：${m}。`,
  belongsTo: (e) => `此 ${e.kind} 属于第 ${e.conn} 个连接；下面的记录是其 SYN 的分发过程。`,
  notDelivered: '模型没有把这个数据包交给该组。',
  ...replayWords('zh-CN'),
  step: (e) => `第 ${e.seq} 个事件（客户端 ${e.tuple.saddr}:${e.tuple.sport}）：${zhEvent(e.what)}。`,
  what: zhEvent,
  wholeNumber: (n, lo, hi) => `${n}：请输入 ${lo} 到 ${hi} 之间的整数。`,
  badSetting: (given, allowed) => `${given} 未被采用（${allowed}），已改用默认值。`,
  secretBad: '哈希密钥：请输入 32 位十六进制数，例如 0x1a2b3c4d。',
  clientListErrors: (errs) => `客户端列表：${errs.join('；')}`,
  noClient: '客户端列表：没有给出任何客户端。',
  tooManyClients: (line, max) => `客户端列表：最多 ${max} 个客户端，第 ${line} 行已超出。请缩短列表。`,
  cannotBuild: (m) => `无法建立该组：${m}`,
  rateBad: (max) => `到达速率：请输入 1 到 ${max} 之间的数。`,
  chooseMember: '请选择一个正在监听的成员来关闭。',
  cpuBad: 'SO_INCOMING_CPU：请输入不小于 0 的整数。',
  fixedIndexName: '固定索引',
  payloadModulusName: '载荷模数',
  summary: zhSummary,
  notApplicable: '不适用',
  chartLabel: (f, ratio) =>
    `各监听套接字的连接数：共 ${f.total} 个，若哈希均匀，每个期望 ${f.expected.toFixed(1)} 个；最大/最小 ${ratio}；Jain 指数 ${f.jain === null ? '不适用' : f.jain.toFixed(3)}`,
  structure: structureWords('zh-CN'),
  marker: (e) => markerWords('zh-CN', e),
  chainMarker: (hashHex, listener, listening) => chainMarkerWords('zh-CN', hashHex, listener, listening),
  card: { kernel: (s) => `内核：${s}`, fallback: (s) => `回退：${s}`, caveats: '注意事项' },
  noSocket: '没有套接字',
  socket: (n) => `套接字 ${n}`,
  score: '得分',
  more: (n) => `另有 ${n} 个`,
  lookupOf: (seq, any) => `第 ${seq} 个事件的查找${any ? '（多个组，发往 127.0.0.1:8888）' : ''}`,
  inspLookupRefused: (m) => `监听套接字查找：模型拒绝此布局：${m}`,
  liveDiffers: (a) => `发送时它去了 ${a}；此后服务器已有变化（关闭、新的监听套接字或新的密钥），这次查找针对的是服务器现在的状态。`,
  inspLookup: (walks, reason, agree) => `监听套接字查找（Host 模型）：${walks}。${reason}。${agree}“监听套接字查找”面板列出了每个候选及其得分。`,
  candidates: (c, n) => `${c}，${n} 个候选`,
};

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

/** The words for the page's language. */
export function dispatchText(lang = document.documentElement.lang): DispatchText {
  return langOf(lang) === 'zh-CN' ? zh : en;
}

/** Both languages, for tests. */
export const DISPATCH_TEXT = { en, zh } as const;
