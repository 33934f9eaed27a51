/**
 * The listener lookup behind a dispatched packet, as the model's full lookup
 * (its `Host`) reports it: the tables (buckets) walked, every candidate socket
 * with its `compute_score` and outcome, the reuseport group's pick and the
 * receiving socket. No DOM and no kernel arithmetic. For the visualized
 * group the Host is the scene's own (the one the controls' calls stepped, so
 * a close, a late join or a new secret is in it as it happened); the
 * addr_any preset is a second Host made by the selftest's calls. Its words
 * are the catalogue's (`ui.lookup.*` in messages/*.json), in the page's
 * language.
 */
import type { CallResult, LookupExplain, Packet, Proto, Tuple } from '../../model/index';
import { callLog, setupAll, type CallLog, type SocketSetup } from '../../model/lookup';
import { say, sayRefusal, sayUi, sayUiCount, type Lang } from '../../model/messages';

/** Which layout the lookup panel asks about. */
export type LookupScene = 'group' | 'addr_any';

/** What a lookup is asked in: what each socket is in the scene, and where packets go. */
export interface HostPlan {
  scene: LookupScene;
  /** The visualized group's listener number of each socket index (null: not one of its listeners). */
  listenerOf: (number | null)[];
  /** Where packets go in this layout (the visualized group's address, or the preset's). */
  daddr: string;
  dport: number;
  /** What the layout is, for {@link describePlan}. */
  facts: PlanFacts;
}

/** What a layout is: the visualized server's sockets (how many, how many closed), or the addr_any preset. */
export type PlanFacts = { scene: 'group'; sockets: number; closed: number; proto: Proto; bind: string; port: number } | { scene: 'addr_any'; port: number };

/** One sentence about the layout, in `lang`. */
export function describePlan(plan: HostPlan, lang: Lang): string {
  const f = plan.facts;
  if (f.scene === 'addr_any') return sayUi(lang, 'lookup.plan_addr_any', { port: f.port });
  return sayUi(lang, 'lookup.plan_group', {
    sockets: sayUiCount(lang, 'lookup.sockets', f.sockets, { proto: f.proto.toUpperCase() }),
    bind: f.bind,
    port: f.port,
    closed: f.closed ? sayUiCount(lang, 'lookup.closed', f.closed) : '',
  });
}

/**
 * The visualized server as a plan: its own Host's sockets (`results`), socket
 * `i` being listener `i`; packets go to the bound address (10.0.0.1 for a
 * wildcard group, the scene's server address).
 */
export function groupPlan(results: CallResult[], proto: Proto, bind: string, port: number): HostPlan {
  return {
    scene: 'group',
    listenerOf: results.map((r) => r.socket),
    daddr: bind === '0.0.0.0' ? '10.0.0.1' : bind,
    dport: port,
    facts: { scene: 'group', sockets: results.length, closed: results.filter((r) => r.closed).length, proto, bind, port },
  };
}

/** A receiving socket: TCP listens after bind; UDP receives from bind on. */
function sock(proto: Proto, family: 'inet' | 'inet6', addr: string, port: number, reuseport = true): SocketSetup {
  return { family, proto, addr, port, reuseport };
}

const keys = (secret: number, v6Outer = 0) => ({ v4: secret >>> 0, v6Outer: v6Outer >>> 0, v6Inner: 0 });

/** reuseport_addr_any (selftests): wildcard IPv4 and IPv6 groups, a specific 127.0.0.1 group, and a socket without SO_REUSEPORT whose bind fails. */
export const ADDR_ANY_PORT = 8888;
export function addrAnyPlan(proto: Proto, secret: number): HostPlan & { layout: CallLog } {
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
