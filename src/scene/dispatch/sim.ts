/**
 * The dispatch scene's state: one model `Host` (the server's sockets,
 * stepped by the calls a program makes: socket, setsockopt, bind, listen,
 * close), the clients, the event list, the packets in flight, per-listener
 * counts and queues. A listener is a socket: listener `i` is fd `i`. No DOM:
 * every kernel answer (the lookup, hash, product, slot, listener,
 * fallbacks, what a call did to the group) comes from that Host
 * (`Host.lookup` per dispatched packet, `lookupBatchV4` for the flow map);
 * this file only moves dots along the path the model reported.
 */
import {
  Host,
  NO_LISTENER,
  V4Batch,
  type Call,
  type Change,
  type CpuPin,
  type Explain,
  type GroupSummary,
  type Dispatched,
  type Member,
  type Program,
  type Proto,
  type Refusal,
} from '../../model/index';
import { ephemeralRange } from '../../model/index';
import { words, type Lang } from '../../model/messages';
import { makeClients, SERVER, type Client } from './clients';
import { emptyTally, replayGroup, replayPayload, tallyCheck, type Replay, type ReplayCheck, type ReplayTally } from './replay';
import { EventLog, type DispatchEvent, type EventWhat, type NoTaker } from './events';
import { COL, clientY, hashToY, along } from './layout';
import type { PacketKind } from './palette';
import { bootSecret, hex32, mix32, Rng } from './rng';
import { drainQueues, type WorkerState } from './workers';

/** What describes a run. Same options, same run. */
export interface SimOptions {
  /** Kernel profile or release. */
  kernel: string;
  proto: Proto;
  /** Members joined at start. */
  listeners: number;
  /** Bound to 0.0.0.0 (true) or to the server address 10.0.0.1. */
  wildcard: boolean;
  /** Seed of clients, arrivals and boots. */
  seed: number;
  /** The IPv4 hash key (`secret + net_hash_mix`). */
  secret: number;
  /** Number of generated clients (ignored with `clientList`). */
  clients: number;
  /** A user-given client list. */
  clientList?: Client[] | null;
  /** New connections (or datagrams) per simulated second. */
  rate: number;
  /** Receiving CPUs the clients are spread over. */
  cpus: number;
  /** A program attached to the group. */
  program: Program | null;
  /** SO_INCOMING_CPU settings at start. */
  incomingCpu?: CpuPin[];
  /**
   * Service rate of each worker (entry i for listener i) as a multiple of the
   * normal rate; workers past the list keep 1. Workload, not kernel. @default []
   */
  rates?: number[];
  /** A trace to replay: its group, clients and records replace the generated ones (kernel, protocol and group come from it). @default null */
  replay?: Replay | null;
}

/** Simulated seconds a packet takes. */
export const TRAVEL: Record<PacketKind, number> = { SYN: 1.6, UDP: 1.6, 'SYN-ACK': 0.5, ACK: 0.5, RST: 0.8 };

const KIND_CODE: Record<PacketKind, number> = { SYN: 0, 'SYN-ACK': 1, ACK: 2, RST: 3, UDP: 4 };
export const KIND_OF_CODE: PacketKind[] = ['SYN', 'SYN-ACK', 'ACK', 'RST', 'UDP'];

/** What the last add or close did, from the model's answers before and after. */
export interface Remap {
  /** The change in English ({@link changeWords}); other languages say it from `op` and `change`. */
  what: string;
  /** The change itself (for words in another language): the operation and the model's record of it. */
  op: Op;
  change: Change | undefined;
  /** The calls it made, each with the kernel's answer (null: success). */
  calls: { call: Call; answer: Refusal | null }[];
  /** Client indexes whose listener changed. */
  moved: number[];
  total: number;
  /** Listener of each moved client before and after (NO_LISTENER for none). */
  from: number[];
  to: number[];
  /** Simulated time it happened. */
  t: number;
}

/** Growable structure-of-arrays store of packets in flight. */
export class Particles {
  n = 0;
  kind = new Uint8Array(256);
  t0 = new Float64Array(256);
  dur = new Float32Array(256);
  client = new Int32Array(256);
  hashY = new Float32Array(256);
  /** The listener each packet goes to, {@link NO_LISTENER} for none. */
  listener = new Uint32Array(256);
  seq = new Float64Array(256);

  add(kind: PacketKind, t0: number, client: number, hashY: number, listener: number, seq: number): void {
    if (this.n === this.kind.length) this.#grow();
    const i = this.n++;
    this.kind[i] = KIND_CODE[kind];
    this.t0[i] = t0;
    this.dur[i] = TRAVEL[kind];
    this.client[i] = client;
    this.hashY[i] = hashY;
    this.listener[i] = listener;
    this.seq[i] = seq;
  }

  /** Removes packets that arrived by `t`; calls `arrived` for each. */
  sweep(t: number, arrived: (kind: PacketKind, listener: number) => void): void {
    let w = 0;
    for (let r = 0; r < this.n; r++) {
      if (this.t0[r]! + this.dur[r]! <= t) {
        arrived(KIND_OF_CODE[this.kind[r]!]!, this.listener[r]!);
        continue;
      }
      if (w !== r) {
        this.kind[w] = this.kind[r]!;
        this.t0[w] = this.t0[r]!;
        this.dur[w] = this.dur[r]!;
        this.client[w] = this.client[r]!;
        this.hashY[w] = this.hashY[r]!;
        this.listener[w] = this.listener[r]!;
        this.seq[w] = this.seq[r]!;
      }
      w++;
    }
    this.n = w;
  }

  /** SYNs (or datagrams) in flight at `t`. */
  inFlight(t: number, kinds: PacketKind[] = ['SYN', 'UDP']): number {
    const codes = kinds.map((k) => KIND_CODE[k]);
    let c = 0;
    for (let i = 0; i < this.n; i++) if (codes.includes(this.kind[i]!) && this.t0[i]! <= t) c++;
    return c;
  }

  clear(): void {
    this.n = 0;
  }

  #grow(): void {
    const g = <T extends Uint8Array | Float64Array | Float32Array | Int32Array | Uint32Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(a.length * 2);
      b.set(a);
      return b;
    };
    this.kind = g(this.kind);
    this.t0 = g(this.t0);
    this.dur = g(this.dur);
    this.client = g(this.client);
    this.hashY = g(this.hashY);
    this.listener = g(this.listener);
    this.seq = g(this.seq);
  }
}

/** Positions of drawn packets, filled per frame. */
export interface Frame {
  n: number;
  x: Float32Array;
  y: Float32Array;
  kind: Uint8Array;
  /** Listener number, {@link NO_LISTENER} for none. */
  listener: Uint32Array;
  seq: Float64Array;
}

export function newFrame(cap = 1024): Frame {
  return { n: 0, x: new Float32Array(cap), y: new Float32Array(cap), kind: new Uint8Array(cap), listener: new Uint32Array(cap), seq: new Float64Array(cap) };
}

/** The receiving socket of every client's packets: the Host's full lookup through the batch API, one call per receiving CPU. */
export function selectClients(
  host: Host,
  proto: Proto,
  clients: readonly Client[],
  batch?: V4Batch,
  server: { addrNum: number; port: number } = SERVER,
): Uint32Array {
  const out = new Uint32Array(clients.length).fill(NO_LISTENER);
  if (clients.length === 0) return out;
  const b = batch ?? new V4Batch(clients.length);
  try {
    const v = b.views();
    const cpus = [...new Set(clients.map((c) => c.cpu))].sort((a, z) => a - z);
    for (const cpu of cpus) {
      const idx: number[] = [];
      clients.forEach((c, i) => {
        if (c.cpu === cpu) idx.push(i);
      });
      idx.forEach((ci, k) => {
        const c = clients[ci]!;
        v.saddr[k] = c.addr;
        v.sport[k] = c.sport;
        v.daddr[k] = server.addrNum;
        v.dport[k] = server.port;
      });
      host.lookupBatchV4(b, idx.length, proto, cpu);
      idx.forEach((ci, k) => {
        out[ci] = v.out[k]!;
      });
    }
  } finally {
    if (!batch) b.dispose();
  }
  return out;
}

/** A change the scene's controls make: a new listener, a close, SO_INCOMING_CPU, or a new boot's secret. */
export type Op = { op: 'join' } | { op: 'close'; listener: number } | { op: 'cpu'; listener: number; cpu: number | undefined } | { op: 'keys'; secret: number };

/** SO_INCOMING_CPU's value that unsets it: the kernel reads an int, and this is -1. */
export const UNSET_CPU = 0xffffffff;

/**
 * The calls a program makes for a control, on a host with `sockets` sockets
 * so far (a new socket is fd `sockets`): a new listener is socket, SO_REUSEPORT,
 * bind and (TCP) listen; a close is close; SO_INCOMING_CPU is setsockopt. A
 * new secret is no call (the keys are drawn at boot).
 */
export function callsOf(op: Op, sockets: number, proto: Proto, bind: string, port: number): Call[] {
  switch (op.op) {
    case 'join': {
      const fd = sockets;
      const calls: Call[] = [
        { call: 'socket', family: 'inet', proto, uid: 0 },
        { call: 'setsockopt', fd, opt: { reuseport: true } },
        { call: 'bind', fd, addr: bind, port },
      ];
      if (proto === 'tcp') calls.push({ call: 'listen', fd });
      return calls;
    }
    case 'close':
      return [{ call: 'close', fd: op.listener }];
    case 'cpu':
      return [{ call: 'setsockopt', fd: op.listener, opt: { incomingCpu: op.cpu ?? UNSET_CPU } }];
    case 'keys':
      return [];
  }
}

/** A call the kernel refused, as an error: the call and the model's refusal (errno and rule). */
export class RefusedCall extends Error {
  constructor(
    readonly call: Call,
    readonly refusal: Refusal,
  ) {
    super(`${call.call} refused: ${refusal.errno} (${refusal.rule})`);
  }
}

/**
 * What a group change did to the flows, in `lang` (the catalogue's
 * `ui.dispatch.remap_phrase.*`): how many now land on another listener, or
 * that none is left to take them.
 */
export function remapPhrase(r: Remap, listening: number, lang: Lang = 'en'): string {
  const w = words(lang, 'dispatch');
  if (listening === 0) return w.say('remap_phrase.none', { total: r.total });
  return w.say('remap_phrase.moved', { moved: r.moved.length, total: r.total });
}

/** A control's change in `lang`, from the operation and the model's record of it (the catalogue's `ui.dispatch.change.*`). */
export function changeWords(lang: Lang, op: Op, c: Change | undefined): string {
  const w = words(lang, 'dispatch');
  switch (op.op) {
    case 'join': {
      if (c?.kind !== 'joined') return w.say('change.joined_unknown');
      const effect =
        c.effect.kind === 'grew'
          ? w.say('change.grew', { from: c.effect.from, to: c.effect.to })
          : c.effect.kind === 'evicted_closed'
            ? w.say('change.evicted', { listener: c.effect.listener })
            : '';
      return w.say('change.joined', { listener: c.listener, slot: c.slot !== null ? w.say('change.at_slot', { slot: c.slot }) : '', effect });
    }
    case 'close': {
      let more = '';
      if (c?.kind === 'left' && c.slot !== null)
        more = c.moved !== null ? w.say('change.moved_in', { moved: c.moved, slot: c.slot }) : w.say('change.last_slot', { slot: c.slot });
      return w.say('change.closed', { listener: op.listener, more });
    }
    case 'cpu':
      return op.cpu === undefined ? w.say('change.cpu_cleared', { listener: op.listener }) : w.say('change.cpu_set', { listener: op.listener, cpu: op.cpu });
    case 'keys':
      return w.say('change.secret', { secret: hex32(op.secret) });
  }
}

export class DispatchSim {
  readonly log: EventLog;
  readonly particles = new Particles();
  opts: SimOptions;
  /** The server's sockets: the one model state the animation and the lookup panel ask. */
  host!: Host;
  clients: Client[] = [];
  /** Simulated seconds. */
  time = 0;
  /** Connections (or datagrams) generated. */
  conns = 0;
  /** Connections dispatched per listener (model answers), indexed by listener. */
  counts: number[] = [];
  /** Connections dispatched to no socket. */
  dropped = 0;
  /** Accept queue length per listener (connections established, not yet accepted by its worker). */
  queue: number[] = [];
  /** Connections each listener's worker has accepted (taken off its queue), indexed by listener. */
  accepted: number[] = [];
  /** Workers stalled now (they accept nothing), by listener. */
  stalled: boolean[] = [];
  /** Listener number per row (listening members in slot order; chain order in the reservoir era). */
  rows: number[] = [];
  /** Row centre (y) per listener: rows sit at their slot at once, so the scene never shows a gap or two rows in one place. */
  rowY: number[] = [];
  rowTarget: number[] = [];
  /**
   * The member the last close moved into the freed slot (the kernel's
   * reuseport_detach_sock moves the last socket into the hole), its old and
   * new row centre, and how far the drawing of that move has got (0 to 1).
   */
  slide: { listener: number; from: number; to: number; u: number } | null = null;
  /** Seconds the drawing of a slide takes. */
  static readonly SLIDE_S = 0.9;
  /** The listener each client's flow lands on now (batch API). */
  clientListener: Uint32Array = new Uint32Array(0);
  lastRemap: Remap | null = null;
  /** Boots drawn from the seed so far. */
  boot = 0;
  /** Each worker accepts this many connections per simulated second, as a multiple of its fair share. @default 1.2 */
  workerHeadroom = 1.2;
  /** The group the listeners are in (undefined: none, as in the reservoir era). */
  #group: number | undefined;
  #summary!: GroupSummary;
  #members: Member[] = [];
  /**
   * The model's record per client for the group as it stands (cleared by every
   * group change). A client's packets all carry the same tuple and CPU, so the
   * model's answer for them is the same until the group changes; only a payload
   * program reads the datagram's number, and then nothing is kept.
   */
  #explained: (Dispatched | string | undefined)[] = [];
  /** Connections dispatched to listeners that have since closed. */
  closedCounts = 0;
  #carry = 0;
  #batch: V4Batch | null = null;
  #tmp = { x: 0, y: 0 };

  constructor(opts: SimOptions, logMax = 20000) {
    this.opts = { ...opts };
    this.log = new EventLog(logMax);
    this.rebuild();
  }

  /** The replay's counts so far (null when not replaying). */
  replayTally: ReplayTally | null = null;

  /** The address the listeners bind. */
  get bindAddr(): string {
    if (this.opts.replay) return this.opts.replay.trace.group.bind;
    return this.opts.wildcard ? '0.0.0.0' : SERVER.addr;
  }

  /** Where packets go: the scene's server, or the replayed trace's. */
  get server(): { addr: string; addrNum: number; port: number } {
    return this.opts.replay?.server ?? SERVER;
  }

  /** Builds the host again from the options (the calls a program makes for the group, replayed); clears the run. */
  rebuild(): void {
    const o = this.opts;
    const r = o.replay ?? null;
    if (r) {
      // The trace says the kernel, the protocol and the group; the key is the replay's.
      o.kernel = r.trace.kernel.profile;
      o.proto = r.trace.group.proto;
      o.listeners = r.trace.group.listeners;
      o.secret = (r.key ?? 0) >>> 0;
    }
    const h = new Host(o.kernel, {
      group: r
        ? replayGroup(r)
        : {
            proto: o.proto,
            listeners: o.listeners,
            bind: this.bindAddr,
            port: SERVER.port,
            keys: { v4: o.secret >>> 0, v6Outer: 0, v6Inner: 0 },
            incomingCpu: o.incomingCpu ?? [],
            program: o.program,
          },
    });
    // A call of the group's the kernel refuses (a program it cannot attach) is a setting it cannot have.
    const answers = h.answers();
    const at = answers.findIndex((a) => a !== null);
    if (at >= 0) {
      const refused = new RefusedCall(h.calls().calls[at]!, answers[at]!);
      h.dispose();
      throw refused;
    }
    this.host?.dispose();
    this.host = h;
    this.#readHost();
    this.clients = r ? r.clients : (o.clientList ?? makeClients(o.seed, o.clients, o.cpus, ephemeralRange(o.kernel)));
    this.replayTally = r ? emptyTally(r.trace.events.length) : null;
    this.#batch?.dispose();
    this.#batch = this.clients.length ? new V4Batch(this.clients.length) : null;
    this.log.clear();
    this.particles.clear();
    this.time = 0;
    this.conns = 0;
    this.#carry = 0;
    this.counts = [];
    this.queue = [];
    this.accepted = [];
    this.stalled = [];
    this.dropped = 0;
    this.closedCounts = 0;
    this.slide = null;
    this.#explained = [];
    this.lastRemap = null;
    this.#layoutRows(true);
    this.clientListener = this.#selectAll();
  }

  #selectAll(): Uint32Array {
    // A payload program routes each datagram by its number, so a client has
    // no single listener: leave it uncoloured rather than show the answer for
    // an empty payload.
    if (this.opts.program?.kind === 'payload_mod') return new Uint32Array(this.clients.length).fill(NO_LISTENER);
    return selectClients(this.host, this.opts.proto, this.clients, this.#batch ?? undefined, this.server);
  }

  /**
   * Reads what the scene shows of the host after a change: the listeners' group
   * (that of a socket still receiving; a group emptied by closes is gone, and the
   * next listener makes a new one), its summary, each socket's member record and
   * the rows: listening members in slot order, or the listening list in the
   * order a lookup walks it when the kernel keeps no group (reservoir era).
   */
  #readHost(): void {
    const h = this.host;
    const results = h.results();
    const live = results.filter((r) => r.receiving && !r.closed);
    this.#group = live.map((r) => h.groupOf(r.socket)).find((g) => g !== undefined);
    const g = this.#group;
    const states = g === undefined ? [] : h.groupMemberStates(g);
    const fds = g === undefined ? new Uint32Array(0) : h.groupMembers(g);
    const members: Member[] = results.map((r) => ({ state: r.closed ? 'closed' : r.receiving ? 'listening' : 'shut_down', incomingCpu: -1, connected: false }));
    fds.forEach((fd, m) => {
      if (states[m]) members[fd] = states[m]!;
    });
    this.#members = members;
    const rows = g !== undefined ? h.groupListening(g) : h.receivingOn(this.opts.proto, this.bindAddr, this.server.port);
    this.rows = [...rows];
    if (g !== undefined) this.#summary = h.groupSummary(g);
    else {
      const rules = h.rules();
      const scan = this.opts.proto === 'tcp' ? rules.tcpScan : rules.udpScan;
      this.#summary = {
        bind: this.bindAddr,
        port: this.server.port,
        selection: scan === 'reservoir' ? 'reservoir' : 'group',
        listening: this.rows.length,
        maxSocks: null,
        closedTail: 0,
        incomingCpu: 0,
        hasConns: false,
      };
    }
  }

  /** The listeners' group at a glance (the model's summary; made of the host's lists when the kernel keeps no group). */
  summary(): GroupSummary {
    return this.#summary;
  }

  /** Every socket's member record, indexed by listener (socket) number. */
  members(): Member[] {
    return this.#members;
  }

  /** Sockets ever made. */
  memberCount(): number {
    return this.#members.length;
  }

  #layoutRows(snap: boolean): void {
    const n = this.memberCount();
    while (this.rowY.length < n) {
      this.rowY.push(0.5);
      this.rowTarget.push(0.5);
    }
    while (this.counts.length < n) this.counts.push(0);
    while (this.queue.length < n) this.queue.push(0);
    while (this.accepted.length < n) this.accepted.push(0);
    this.rows.forEach((l, i) => {
      this.rowTarget[l] = (i + 0.5) / this.rows.length;
      this.rowY[l] = this.rowTarget[l]!;
    });
    if (snap && this.slide) this.slide.u = 1;
  }

  /** Row index of each listener (-1 when not listening). */
  rowOf(listener: number): number {
    return this.rows.indexOf(listener);
  }

  /**
   * Makes a control's calls on the host, in order, and records which client
   * flows now land elsewhere (the model's answers before and after). A call
   * the kernel refuses stops the rest and throws {@link RefusedCall}, after
   * the scene has taken in what the calls before it did.
   */
  #change(op: Op, snap: boolean): Change | undefined {
    const before = this.clientListener;
    const oldY = [...this.rowY];
    const made: { call: Call; answer: Refusal | null }[] = [];
    let change: Change | undefined;
    let refused: RefusedCall | null = null;
    if (op.op === 'keys') this.host.setKeys({ v4: op.secret >>> 0, v6Outer: 0, v6Inner: 0 });
    for (const call of callsOf(op, this.memberCount(), this.opts.proto, this.bindAddr, this.server.port)) {
      const answer = this.host.apply(call);
      made.push({ call, answer });
      change = this.host.lastChange()?.change ?? change;
      if (answer) {
        refused = new RefusedCall(call, answer);
        break;
      }
    }
    this.#readHost();
    this.#explained = [];
    this.slide = null;
    if (op.op === 'close') this.closedCounts += this.counts[op.listener] ?? 0;
    if (change?.kind === 'left' && change.moved !== null && change.moved !== undefined)
      this.slide = { listener: change.moved, from: oldY[change.moved] ?? 0.5, to: 0.5, u: 0 };
    this.#layoutRows(snap);
    if (this.slide) this.slide.to = this.rowY[this.slide.listener] ?? 0.5;
    const after = this.#selectAll();
    this.clientListener = after;
    const moved: number[] = [];
    const from: number[] = [];
    const to: number[] = [];
    for (let i = 0; i < after.length; i++)
      if (before[i] !== after[i]) {
        moved.push(i);
        from.push(before[i]!);
        to.push(after[i]!);
      }
    this.lastRemap = { what: changeWords('en', op, change), op, change, calls: made, moved, total: after.length, from, to, t: this.time };
    if (refused) throw refused;
    return change;
  }

  /** A new member joins; returns the model's record (its slot, any growth of socks[]). */
  join(snap = false): Change {
    return this.#change({ op: 'join' }, snap)!;
  }

  /** Closes a listener; returns the model's record of the slot freed and the member moved into it. */
  close(listener: number, snap = false): Change {
    return this.#change({ op: 'close', listener }, snap)!;
  }

  setIncomingCpu(listener: number, cpu: number | undefined, snap = false): void {
    this.#change({ op: 'cpu', listener, cpu }, snap);
  }

  /** Replaces the hash key (a new boot, or a typed secret). */
  setSecret(secret: number): void {
    this.opts.secret = secret >>> 0;
    this.#change({ op: 'keys', secret: secret >>> 0 }, true);
  }

  /** Draws the next boot's secret from the seed. */
  newBoot(): number {
    this.boot++;
    const s = bootSecret(this.opts.seed, this.boot);
    this.setSecret(s);
    return s;
  }

  /** The packets of connection `n` (deterministic from the seed and n), explained by the model. */
  #connection(n: number, t: number): DispatchEvent[] {
    const r = this.opts.replay ?? null;
    if (r && n >= r.trace.events.length) return [];
    const rng = new Rng(mix32(this.opts.seed, n + 1));
    const ci = r ? r.clientOf[n]! : this.clients.length ? rng.below(this.clients.length) : -1;
    if (ci < 0) return [];
    const c = this.clients[ci]!;
    const server = this.server;
    const tuple = { saddr: c.saddr, sport: c.sport, daddr: server.addr, dport: server.port };
    // A datagram's payload is its number (payload_mod programs read it); a SYN carries none.
    const payload = r ? replayPayload(r, n) : this.opts.proto === 'udp' ? n >>> 0 : null;
    const perPacket = r ? payload !== null : this.opts.program?.kind === 'payload_mod';
    let lk: Dispatched | null = null;
    let err = '';
    // A replay without the key does not ask the model: its answer would be for a key that is not the kernel's.
    const ask = !r || r.key !== null;
    const cached = perPacket || !ask ? undefined : this.#explained[ci];
    if (!ask) {
      // Nothing to ask.
    } else if (cached !== undefined) {
      if (typeof cached === 'string') err = cached;
      else lk = cached;
    } else {
      try {
        lk = this.host.dispatch({ proto: this.opts.proto, tuple, device: null, ctx: { cpu: c.cpu, payload } });
      } catch (e) {
        err = (e as Error).message;
      }
      if (!perPacket) this.#explained[ci] = lk ?? err;
    }
    // The group's own record (hash, product, slot) when a group picked; the
    // reservoir era's scan is the lookup's walk, which the inspector asks for.
    const ex: Explain | null = lk?.explain ?? null;
    let listener = lk?.socket ?? null;
    let hash = lk?.hash ?? null;
    let slot = ex?.slot ?? null;
    let replay: ReplayCheck | undefined;
    if (r) {
      // The packet goes where the kernel sent it; the model's answer is checked beside it.
      const rec = r.trace.events[n]!;
      const kernelHash = rec.hash ?? null;
      replay = {
        record: n,
        kernel: rec.listener,
        model: ask ? listener : undefined,
        kernelHash,
        hashAgrees: kernelHash === null || !ask || lk === null ? null : lk.hash === kernelHash,
      };
      tallyCheck(this.replayTally!, replay);
      listener = rec.listener;
      hash = kernelHash ?? hash;
      slot = rec.slot ?? (replay.model === listener ? slot : null);
    }
    const base = {
      conn: n,
      t,
      client: ci,
      tuple,
      cpu: c.cpu,
      payload,
      listener,
      slot,
      hash,
      hashHex: hash === null ? null : hex32(hash).slice(2),
      explain: ex,
      replay,
    };
    const seq0 = this.log.nextSeq;
    const ev = (k: number, kind: PacketKind, dt: number, what: EventWhat): DispatchEvent => ({ ...base, seq: seq0 + k, kind, t: t + dt, what });
    // Data, not words: the page says each event in its language.
    const why: NoTaker = ex?.fallback ? { fallback: ex.fallback } : err ? { error: err } : null;
    if (this.opts.proto === 'udp') return [ev(0, 'UDP', 0, listener === null ? { kind: 'datagram-dropped', n, why } : { kind: 'datagram', n, listener, slot })];
    if (listener === null) return [ev(0, 'SYN', 0, { kind: 'syn-dropped', why }), ev(1, 'RST', TRAVEL.SYN * 0.4, { kind: 'rst' })];
    return [
      ev(0, 'SYN', 0, { kind: 'syn', listener, slot }),
      ev(1, 'SYN-ACK', TRAVEL.SYN, { kind: 'syn-ack', listener }),
      ev(2, 'ACK', TRAVEL.SYN + TRAVEL['SYN-ACK'], { kind: 'ack', listener }),
    ];
  }

  #record(evs: DispatchEvent[], spawn: boolean): void {
    this.log.push(evs);
    for (const e of evs) {
      if (e.kind === 'SYN' || e.kind === 'UDP') {
        if (e.listener === null) this.dropped++;
        else this.counts[e.listener] = (this.counts[e.listener] ?? 0) + 1;
      }
      if (spawn) this.particles.add(e.kind, e.t, e.client, e.hash === null ? 0.5 : hashToY(e.hash), e.listener ?? NO_LISTENER, e.seq);
    }
  }

  /** Whether a replay has sent every record. */
  get replayDone(): boolean {
    const r = this.opts.replay;
    return !!r && this.conns >= r.trace.events.length;
  }

  /** Generates the next connection without animating it (stepping); returns its events. */
  nextConnection(): DispatchEvent[] {
    if (this.replayDone) return [];
    const evs = this.#connection(this.conns++, this.time);
    this.#record(evs, false);
    return evs;
  }

  /** The listening members whose worker is stalled or not at the normal rate, in slot order, with their queue and accepts. */
  unusualWorkers(): { listener: number; rate: number; stalled: boolean; queue: number; accepted: number }[] {
    const out = [];
    for (const l of this.rows) {
      const w = this.worker(l);
      if (w.stalled || w.rate !== 1) out.push({ listener: l, ...w, queue: this.queue[l] ?? 0, accepted: this.accepted[l] ?? 0 });
    }
    return out;
  }

  /** Listener `l`'s worker: its service rate and whether it is stalled. */
  worker(l: number): WorkerState {
    return { rate: this.opts.rates?.[l] ?? 1, stalled: this.stalled[l] === true };
  }

  /** Stalls or resumes listener `l`'s worker (a stalled worker accepts nothing; the hash keeps sending it connections). */
  setStalled(l: number, stalled: boolean): void {
    this.stalled[l] = stalled;
  }

  /** Sets listener `l`'s worker's service rate (a multiple of the normal rate). */
  setRate(l: number, rate: number): void {
    const r = [...(this.opts.rates ?? [])];
    while (r.length <= l) r.push(1);
    r[l] = rate;
    this.opts.rates = r;
  }

  /** Advances simulated time by `dt` seconds: new connections at the rate, arrivals, workers. */
  advance(dt: number, snapRows = false): void {
    if (dt > 0) {
      this.#carry += this.opts.rate * dt;
      const k = Math.floor(this.#carry);
      this.#carry -= k;
      for (let i = 0; i < k && !this.replayDone; i++) {
        const t = this.time + (dt * (i + 1)) / (k + 1);
        this.#record(this.#connection(this.conns++, t), true);
      }
      this.time += dt;
    }
    this.particles.sweep(this.time, (kind, l) => {
      if (l !== NO_LISTENER && (kind === 'ACK' || kind === 'UDP')) this.queue[l] = (this.queue[l] ?? 0) + 1;
    });
    if (dt > 0) drainQueues(this.queue, this.accepted, this.rows, this.opts.rate, this.workerHeadroom, (l) => this.worker(l), dt);
    // The slide of a closed slot is drawn in wall-clock time by the widget (animateRows), not in simulated time.
    if (snapRows) this.snapRows();
  }

  /** Moves the drawing of the last slide on by `dt` seconds of animation (Infinity ends it); returns whether it still moves. */
  animateRows(dt: number): boolean {
    if (!this.slide || this.slide.u >= 1) return false;
    this.slide.u = Math.min(1, this.slide.u + dt / DispatchSim.SLIDE_S);
    return this.slide.u < 1;
  }

  /** Ends any slide at once (reduced motion). */
  snapRows(): void {
    if (this.slide) this.slide.u = 1;
  }

  /** Row centre of a listener now (its last place when no longer listening). */
  listenerY(l: number): number {
    return this.rowY[l] ?? 0.5;
  }

  /** The path of one packet, as [x, y, ...] points and segment weights. */
  path(kind: PacketKind, client: number, hashY: number, listener: number): { pts: number[]; w: number[] } {
    const cy = clientY(client, this.clients.length);
    const ly = listener !== NO_LISTENER ? this.listenerY(listener) : 0.5;
    const bySlot = this.summary().selection === 'group';
    switch (kind) {
      case 'SYN':
      case 'UDP':
        if (listener === NO_LISTENER) return { pts: [COL.client, cy, COL.hash, hashY], w: [1] };
        return bySlot
          ? { pts: [COL.client, cy, COL.hash, hashY, COL.slot, ly, COL.listener, ly], w: [0.45, 0.3, 0.25] }
          : { pts: [COL.client, cy, COL.hash, hashY, COL.listener, ly], w: [0.5, 0.5] };
      case 'SYN-ACK':
        return { pts: [COL.listener, ly, COL.client, cy], w: [1] };
      case 'ACK':
        return { pts: [COL.client, cy, COL.listener, ly], w: [1] };
      case 'RST':
        return { pts: [COL.hash, hashY, COL.client, cy], w: [1] };
    }
  }

  /** Fills `f` with the position of every packet in flight at the current time. */
  frame(f: Frame): Frame {
    const p = this.particles;
    if (f.x.length < p.n) Object.assign(f, newFrame(p.n * 2));
    const bySlot = this.summary().selection === 'group';
    const nc = this.clients.length;
    let k = 0;
    const tmp = this.#tmp;
    for (let i = 0; i < p.n; i++) {
      const t0 = p.t0[i]!;
      if (t0 > this.time) continue;
      const u = (this.time - t0) / p.dur[i]!;
      const kind = p.kind[i]!;
      const l = p.listener[i]!;
      const cy = (p.client[i]! + 0.5) / nc;
      const hy = p.hashY[i]!;
      const ly = l !== NO_LISTENER ? (this.rowY[l] ?? 0.5) : 0.5;
      if (kind === 0 || kind === 4) {
        // SYN / UDP: client -> hash -> slot -> listener (inline for speed; same path as path()).
        if (l === NO_LISTENER) {
          tmp.x = COL.client + (COL.hash - COL.client) * u;
          tmp.y = cy + (hy - cy) * u;
        } else if (bySlot) {
          if (u < 0.45) {
            const v = u / 0.45;
            tmp.x = COL.client + (COL.hash - COL.client) * v;
            tmp.y = cy + (hy - cy) * v;
          } else if (u < 0.75) {
            const v = (u - 0.45) / 0.3;
            tmp.x = COL.hash + (COL.slot - COL.hash) * v;
            tmp.y = hy + (ly - hy) * v;
          } else {
            const v = (u - 0.75) / 0.25;
            tmp.x = COL.slot + (COL.listener - COL.slot) * v;
            tmp.y = ly;
          }
        } else along([COL.client, cy, COL.hash, hy, COL.listener, ly], [0.5, 0.5], u, tmp);
      } else if (kind === 1) {
        tmp.x = COL.listener + (COL.client - COL.listener) * u;
        tmp.y = ly + (cy - ly) * u;
      } else if (kind === 2) {
        tmp.x = COL.client + (COL.listener - COL.client) * u;
        tmp.y = cy + (ly - cy) * u;
      } else {
        tmp.x = COL.hash + (COL.client - COL.hash) * u;
        tmp.y = hy + (cy - hy) * u;
      }
      f.x[k] = tmp.x;
      f.y[k] = tmp.y;
      f.kind[k] = kind;
      f.listener[k] = l;
      f.seq[k] = p.seq[i]!;
      k++;
    }
    f.n = k;
    return f;
  }

  /** The scene in words of `lang` (the catalogue's `ui.dispatch.summary.*`), for the aria-live summary. */
  describe(lang: Lang = 'en'): string {
    const w = words(lang, 'dispatch');
    const s = this.summary();
    const o = this.opts;
    const inflight = this.particles.inFlight(this.time);
    const n = s.listening;
    const parts = [
      w.say(n === 1 ? 'summary.group.one' : 'summary.group.other', { proto: o.proto.toUpperCase(), kernel: o.kernel, bind: s.bind, port: s.port, n }),
      s.selection === 'group' ? w.say('summary.socks', { max: String(s.maxSocks) }) : w.say('summary.no_group'),
      w.say('summary.clients', { n: this.clients.length }),
      w.say(o.proto === 'udp' ? 'summary.conns_udp' : 'summary.conns_tcp', { n: this.conns, inflight }),
    ];
    if (this.dropped) parts.push(w.say('summary.dropped', { n: this.dropped }));
    const odd = this.unusualWorkers();
    if (odd.length)
      parts.push(
        odd
          .map((x) => {
            const fields = { listener: x.listener, rate: x.rate, queued: Math.floor(x.queue), accepted: Math.floor(x.accepted) };
            return w.say(x.stalled ? 'summary.worker_stalled' : 'summary.worker_rate', fields);
          })
          .join(w.say('list_sep')),
      );
    const r = this.lastRemap;
    if (r) parts.push(w.say('summary.remap', { what: changeWords(lang, r.op, r.change), phrase: remapPhrase(r, n, lang) }));
    return w.say('summary.end', { parts: parts.join(w.say('summary.sep')) });
  }

  dispose(): void {
    this.#batch?.dispose();
    this.#batch = null;
    this.host.dispose();
  }
}
