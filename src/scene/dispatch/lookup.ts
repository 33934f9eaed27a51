/**
 * The listener lookup behind a dispatched packet, as the model's full lookup
 * (`Host` of `pkg-lookup`) reports it: the tables (buckets) walked, every
 * candidate socket with its `compute_score` and outcome, the reuseport
 * group's pick and the receiving socket. No DOM and no kernel arithmetic:
 * this file writes the calls that make the visualized group (or a preset
 * with several groups) and turns the model's answer into rows.
 */
import type { Member, Program, Proto, Tuple } from '../../model/index';
import { callLog, setupAll, type CallLog, type CallResult, type Layout, type LookupExplain, type Packet, type SocketSetup } from '../../model/lookup';
import { say, sayRefusal, type Lang } from '../../model/messages';

/** Which layout the lookup panel asks about. */
export type LookupScene = 'group' | 'addr_any';

/** A layout for the model's Host, with what each socket is in the scene. */
export interface HostPlan {
  scene: LookupScene;
  /** What the Host replays: a call log (a pasted layout may be in the earlier form, which the model converts). */
  layout: CallLog | Layout;
  /** The visualized group's listener number of each socket index (null: not one of its listeners). */
  listenerOf: (number | null)[];
  /** Where packets go in this layout (the visualized group's address, or the preset's). */
  daddr: string;
  dport: number;
  /** One sentence about the layout. */
  describe: string;
}

/** What of the visualized group a layout needs (all from the model or the run's options). */
export interface GroupSource {
  proto: Proto;
  /** Bound address and port of the group. */
  bind: string;
  port: number;
  /** The IPv4 hash key. */
  secret: number;
  program: Program | null;
  /** `Group.members()`, indexed by listener number. */
  members: Member[];
  /** Listeners closed, in order, when no listener joined after a close; the layout then replays the closes. */
  closedOrder?: number[];
}

/** A receiving socket: TCP listens after bind; UDP receives from bind on. */
function sock(proto: Proto, family: 'inet' | 'inet6', addr: string, port: number, reuseport = true): SocketSetup {
  return { family, proto, addr, port, reuseport };
}

const keys = (secret: number, v6Outer = 0) => ({ v4: secret >>> 0, v6Outer: v6Outer >>> 0, v6Inner: 0 });

/**
 * The visualized group as a call log: one socket per listening member, in
 * listener-number order (so they join the Host's group in the same order),
 * with its SO_INCOMING_CPU; closed members are omitted. The group's program
 * is attached on the first socket after all have joined (the selftests' order).
 */
export function groupPlan(g: GroupSource): HostPlan {
  const listenerOf: number[] = [];
  const sockets: SocketSetup[] = [];
  const replay = g.closedOrder !== undefined;
  g.members.forEach((m, l) => {
    // With the close order known, every member binds and listens, then the
    // closes run in order: the Host's socks[] is then the live group's.
    if (!replay && m.state !== 'listening') return;
    listenerOf.push(l);
    sockets.push({ ...sock(g.proto, 'inet', g.bind, g.port), incomingCpu: m.incomingCpu >= 0 ? m.incomingCpu : null });
  });
  const calls = setupAll(sockets);
  if (g.program && sockets.length) calls.push({ call: 'setsockopt', fd: 0, opt: { attachReuseport: g.program } });
  if (replay) for (const fd of g.closedOrder!) calls.push({ call: 'close', fd });
  const omitted = g.members.length - sockets.length;
  return {
    scene: 'group',
    layout: callLog(calls, keys(g.secret)),
    listenerOf,
    daddr: g.bind === '0.0.0.0' ? '10.0.0.1' : g.bind,
    dport: g.port,
    describe:
      `The visualized group as ${sockets.length} ${g.proto.toUpperCase()} socket${sockets.length === 1 ? '' : 's'} bound to ${g.bind}:${g.port}, ` +
      `socket i being listener i` +
      (replay && g.closedOrder!.length ? `, with the closes replayed in order (${g.closedOrder!.join(', ')})` : '') +
      (omitted
        ? ` (${omitted} closed listener${omitted === 1 ? '' : 's'} left out: a listener joined after a close, ` +
          `which a Host layout cannot replay, so its socks[] order can differ from the live group's)`
        : '') +
      '.',
  };
}

/** reuseport_addr_any (selftests): wildcard IPv4 and IPv6 groups, a specific 127.0.0.1 group, and a socket without SO_REUSEPORT whose bind fails. */
export const ADDR_ANY_PORT = 8888;
export function addrAnyPlan(proto: Proto, secret: number): HostPlan {
  const p = ADDR_ANY_PORT;
  const v4 = () => sock(proto, 'inet', '0.0.0.0', p);
  const v6 = () => sock(proto, 'inet6', '::', p);
  const lo = () => sock(proto, 'inet', '127.0.0.1', p);
  const sockets = [v4(), v4(), v6(), v6(), lo(), v4(), v4(), v6(), v6(), sock(proto, 'inet', '127.0.0.1', p, false)];
  return {
    scene: 'addr_any',
    layout: callLog(setupAll(sockets), keys(secret, secret)),
    listenerOf: sockets.map(() => null),
    daddr: '127.0.0.1',
    dport: p,
    describe:
      `Several groups on port ${p} (tools/testing/selftests/net/reuseport_addr_any.c): sockets 0, 1, 5, 6 on 0.0.0.0, 2, 3, 7, 8 on :: (dual-stack), 4 ` +
      `on 127.0.0.1, all with SO_REUSEPORT, then 9 on 127.0.0.1 without it. The packet is the inspected client's, sent to 127.0.0.1:${p}.`,
  };
}

/** The packet the Host looks up for a dispatched one: same client and CPU, the plan's destination. */
export function hostPacket(plan: HostPlan, proto: Proto, tuple: Tuple, cpu: number, payload: number | null): Packet {
  return { proto, tuple: { saddr: tuple.saddr, sport: tuple.sport, daddr: plan.daddr, dport: plan.dport }, device: null, ctx: { cpu, payload } };
}

/** One table walked, ready to render. */
export interface WalkView {
  caption: string;
  source: string;
  daddr: string;
  head: string[];
  rows: string[][];
  /** The socket index of each row (the model's candidates, in list order). */
  sockets: number[];
  /** Rows of the receiving socket. */
  highlight: number[];
  /** The same candidates in a few characters each, for the scene: listener (or socket) and score. */
  chips: { label: string; score: number; chosen: boolean }[];
}

/** The whole lookup, ready to render. */
export interface LookupView {
  headline: string;
  /** Receiving socket (layout index), as the model said. */
  socket: number | null;
  /** Its listener number in the visualized group (scene `group`). */
  listener: number | null;
  /** The group's member number of the receiving socket. */
  member: number | null;
  walks: WalkView[];
  groupLine: string | null;
  reason: string;
  skLookup: string | null;
  notes: string[];
  /** bind()/listen()/attach refusals, in words. */
  refusals: string[];
}

function sockLabel(plan: HostPlan, results: CallResult[], s: number): string {
  const r = results[s];
  const where = r ? (r.family === 'inet6' ? `[${r.addr}]:${r.port}` : `${r.addr}:${r.port}`) : '?';
  const l = plan.listenerOf[s];
  const gm = r && r.group !== null ? `, group ${r.group} member ${r.member}` : '';
  return `socket ${s} (${where}${l !== null && l !== undefined ? `, L${l}` : ''}${gm})`;
}

/** Turns the model's lookup into rows: one table per bucket walked, one row per candidate the model listed. */
export function lookupView(plan: HostPlan, results: CallResult[], ex: LookupExplain, lang: Lang = 'en'): LookupView {
  const walks = ex.tables.map((t) => ({
    caption: say(lang, 'table_name', t.table),
    source: say(lang, 'kernel_source', t.source),
    daddr: t.daddr,
    head: ['socket', 'compute_score', 'outcome'],
    rows: t.candidates.map((c) => [
      sockLabel(plan, results, c.socket),
      c.score < 0 ? `${c.score} (no match)` : String(c.score),
      say(lang, 'candidate_outcome', c.outcome),
    ]),
    sockets: t.candidates.map((c) => c.socket),
    highlight: t.candidates.flatMap((c, i) => (c.socket === ex.socket ? [i] : [])),
    chips: t.candidates.map((c) => {
      const l = plan.listenerOf[c.socket];
      return { label: l !== null && l !== undefined ? `L${l}` : `socket ${c.socket}`, score: c.score, chosen: c.socket === ex.socket };
    }),
  }));
  const g = ex.group;
  const member = g && ex.socket !== null ? g.members.indexOf(ex.socket) : -1;
  const listener = ex.socket === null ? null : (plan.listenerOf[ex.socket] ?? null);
  const who =
    ex.socket === null
      ? 'no socket receives it'
      : `${sockLabel(plan, results, ex.socket)} receives it${listener !== null ? `: listener L${listener} of the visualized group` : ''}`;
  const groupLine = g
    ? `Reuseport group ${g.group} (members by number: ${g.members.map((s, m) => `${m}→socket ${s}`).join(', ')}) picked member ` +
      `${g.explain.listener ?? 'none'}${g.explain.slot !== null ? ` in socks[${g.explain.slot}]` : ''}, hash ` +
      `${g.explain.hash.hashHex}${g.explain.fallback ? `; ${say(lang, 'fallback', g.explain.fallback)}` : ''}.`
    : null;
  const refusals = results.flatMap((r) =>
    (['bind', 'listen', 'attach'] as const).flatMap((call) => {
      const x = r[call];
      return x
        ? [
            `socket ${r.socket}: ${call}() fails with ${x.errno}${x.with !== null && x.with !== undefined ? ` (against socket ${x.with})` : ''}: ` +
              `${sayRefusal(lang, x)}`,
          ]
        : [];
    }),
  );
  return {
    headline:
      `Kernel ${ex.profile.major}.${ex.profile.minor}, ${ex.packet.proto.toUpperCase()} ${ex.packet.tuple.saddr}:${ex.packet.tuple.sport} → ` +
      `${ex.packet.tuple.daddr}:${ex.packet.tuple.dport}: ${ex.tables.length} table${ex.tables.length === 1 ? '' : 's'} walked; ${who}.`,
    socket: ex.socket,
    listener,
    member: member >= 0 ? member : null,
    walks,
    groupLine,
    reason: ex.reason === null ? '' : say(lang, 'lookup_reason', ex.reason),
    skLookup: ex.skLookup === null ? null : say(lang, 'sk_lookup_outcome', ex.skLookup),
    notes: ex.notes.map((n) => say(lang, 'note', n)),
    refusals,
  };
}
