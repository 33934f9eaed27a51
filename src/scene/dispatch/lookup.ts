/**
 * The listener lookup behind a dispatched packet, as the model's full lookup
 * (`Host` of `pkg-lookup`) reports it: the tables (buckets) walked, every
 * candidate socket with its `compute_score` and outcome, the reuseport
 * group's pick and the receiving socket. No DOM and no kernel arithmetic:
 * this file writes the calls that make the visualized group (or a preset
 * with several groups) and turns the model's answer into rows. Its words
 * are the catalogue's (`ui.lookup.*` in messages/*.json), in the page's
 * language.
 */
import type { Member, Program, Proto, Tuple } from '../../model/index';
import { callLog, setupAll, type CallLog, type CallResult, type Layout, type LookupExplain, type Packet, type SocketSetup } from '../../model/lookup';
import { say, sayRefusal, sayUi, sayUiCount, type Lang } from '../../model/messages';

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
  /** What the layout is, for {@link describePlan}. */
  facts: PlanFacts;
}

/** What a layout is: the visualized group (its sockets, closes replayed or left out), or the addr_any preset. */
export type PlanFacts =
  | { scene: 'group'; sockets: number; proto: Proto; bind: string; port: number; replayed: number[] | null; omitted: number }
  | { scene: 'addr_any'; port: number };

/** One sentence about the layout, in `lang`. */
export function describePlan(plan: HostPlan, lang: Lang): string {
  const f = plan.facts;
  if (f.scene === 'addr_any') return sayUi(lang, 'lookup.plan_addr_any', { port: f.port });
  return sayUi(lang, 'lookup.plan_group', {
    sockets: sayUiCount(lang, 'lookup.sockets', f.sockets, { proto: f.proto.toUpperCase() }),
    bind: f.bind,
    port: f.port,
    replayed: f.replayed?.length ? sayUi(lang, 'lookup.replayed', { order: f.replayed.join(', ') }) : '',
    omitted: f.omitted ? sayUiCount(lang, 'lookup.omitted', f.omitted) : '',
  });
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
    facts: { scene: 'group', sockets: sockets.length, proto: g.proto, bind: g.bind, port: g.port, replayed: replay ? g.closedOrder! : null, omitted },
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
    facts: { scene: 'addr_any', port: p },
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

function sockLabel(plan: Pick<HostPlan, 'listenerOf'>, results: CallResult[], s: number, lang: Lang): string {
  const r = results[s];
  const where = r ? (r.family === 'inet6' ? `[${r.addr}]:${r.port}` : `${r.addr}:${r.port}`) : '?';
  const l = plan.listenerOf[s];
  return sayUi(lang, 'lookup.socket_label', {
    socket: s,
    where,
    listener: l !== null && l !== undefined ? sayUi(lang, 'lookup.socket_listener', { listener: l }) : '',
    member: r && r.group !== null ? sayUi(lang, 'lookup.socket_member', { group: r.group, member: String(r.member) }) : '',
  });
}

/** Turns the model's lookup into rows: one table per bucket walked, one row per candidate the model listed. */
export function lookupView(plan: Pick<HostPlan, 'listenerOf'>, results: CallResult[], ex: LookupExplain, lang: Lang = 'en'): LookupView {
  const walks = ex.tables.map((t) => ({
    caption: say(lang, 'table_name', t.table),
    source: say(lang, 'kernel_source', t.source),
    daddr: t.daddr,
    head: [sayUi(lang, 'lookup.col_socket'), sayUi(lang, 'lookup.col_score'), sayUi(lang, 'lookup.col_outcome')],
    rows: t.candidates.map((c) => [
      sockLabel(plan, results, c.socket, lang),
      c.score < 0 ? sayUi(lang, 'lookup.no_match', { score: c.score }) : String(c.score),
      say(lang, 'candidate_outcome', c.outcome),
    ]),
    sockets: t.candidates.map((c) => c.socket),
    highlight: t.candidates.flatMap((c, i) => (c.socket === ex.socket ? [i] : [])),
    chips: t.candidates.map((c) => {
      const l = plan.listenerOf[c.socket];
      return {
        label: l !== null && l !== undefined ? `L${l}` : sayUi(lang, 'lookup.chip_socket', { socket: c.socket }),
        score: c.score,
        chosen: c.socket === ex.socket,
      };
    }),
  }));
  const g = ex.group;
  const member = g && ex.socket !== null ? g.members.indexOf(ex.socket) : -1;
  const listener = ex.socket === null ? null : (plan.listenerOf[ex.socket] ?? null);
  const who =
    ex.socket === null
      ? sayUi(lang, 'lookup.nobody')
      : sayUi(lang, 'lookup.receiver', {
          socket: sockLabel(plan, results, ex.socket, lang),
          listener: listener !== null ? sayUi(lang, 'lookup.receiver_listener', { listener }) : '',
        });
  const groupLine = g
    ? sayUi(lang, 'lookup.group_line', {
        group: g.group,
        members: g.members.map((s, m) => sayUi(lang, 'lookup.group_member', { member: m, socket: s })).join(', '),
        member: g.explain.listener ?? sayUi(lang, 'lookup.no_member'),
        slot: g.explain.slot !== null ? sayUi(lang, 'lookup.in_slot', { slot: g.explain.slot }) : '',
        hash: g.explain.hash.hashHex,
        fallback: g.explain.fallback ? sayUi(lang, 'lookup.fallback', { fallback: say(lang, 'fallback', g.explain.fallback) }) : '',
      })
    : null;
  const refusals = results.flatMap((r) =>
    (['bind', 'listen', 'attach'] as const).flatMap((call) => {
      const x = r[call];
      return x
        ? [
            sayUi(lang, 'lookup.refusal', {
              socket: r.socket,
              call,
              errno: x.errno,
              with: x.with !== null && x.with !== undefined ? sayUi(lang, 'lookup.refusal_with', { with: x.with }) : '',
              rule: sayRefusal(lang, x),
            }),
          ]
        : [];
    }),
  );
  const tuple = ex.packet.tuple;
  return {
    headline: sayUiCount(lang, 'lookup.headline', ex.tables.length, {
      kernel: `${ex.profile.major}.${ex.profile.minor}`,
      proto: ex.packet.proto.toUpperCase(),
      saddr: tuple.saddr,
      sport: tuple.sport,
      daddr: tuple.daddr,
      dport: tuple.dport,
      tables: ex.tables.length,
      who,
    }),
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
