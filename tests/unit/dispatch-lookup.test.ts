import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { Group } from '../../src/model/index';
import { Host, loadLookupSync, type Call } from '../../src/model/lookup';
import { say } from '../../src/model/messages';
import { SERVER } from '../../src/scene/dispatch/clients';
import { addrAnyPlan, groupPlan, hostPacket, lookupView, type HostPlan } from '../../src/scene/dispatch/lookup';

/** The plan's calls (its layout is a call log). */
const callsOf = (plan: HostPlan): Call[] => ('calls' in plan.layout ? plan.layout.calls : []);
import { DispatchSim, type SimOptions } from '../../src/scene/dispatch/sim';
import { loadModelForTests } from './setup-model';

const wasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));
const base: SimOptions = {
  kernel: '6.18',
  proto: 'tcp',
  listeners: 6,
  wildcard: false,
  seed: 9,
  secret: 0x5eed1234,
  clients: 50,
  rate: 100,
  cpus: 4,
  program: null,
};

const planOf = (sim: DispatchSim) => {
  const s = sim.summary();
  return groupPlan({ proto: sim.opts.proto, bind: s.bind, port: s.port, secret: sim.opts.secret, program: sim.opts.program, members: sim.group.members() });
};

const dispatched = (sim: DispatchSim, n: number) => {
  for (let i = 0; i < n; i++) sim.nextConnection();
  return sim.log.window(sim.log.nextSeq - 1, 1000).filter((e) => e.kind === 'SYN' || e.kind === 'UDP');
};

describe('dispatch: listener lookup panel', () => {
  beforeAll(() => {
    loadModelForTests();
    loadLookupSync(readFileSync(wasm));
  });

  it('lists exactly the candidates the model reports and maps the pick to the group member the scene shows', () => {
    const cases: Partial<SimOptions>[] = [
      { kernel: '6.18' },
      { kernel: '4.17' },
      { kernel: '3.9', listeners: 3 },
      { kernel: '5.10', proto: 'udp', wildcard: true },
      { kernel: '6.12', proto: 'udp', program: { kind: 'payload_mod', modulus: 4 } },
    ];
    for (const c of cases) {
      const sim = new DispatchSim({ ...base, ...c });
      const plan = planOf(sim);
      const host = new Host(sim.opts.kernel, plan.layout);
      const results = host.results();
      expect(
        results.filter((r) => !r.receiving),
        JSON.stringify(c),
      ).toEqual([]);
      const evs = dispatched(sim, 15);
      expect(evs.length).toBe(15);
      for (const e of evs) {
        const ex = host.lookup(hostPacket(plan, sim.opts.proto, e.tuple, e.cpu, e.payload));
        const v = lookupView(plan, results, ex);
        expect(v.walks.map((w) => w.caption)).toEqual(ex.tables.map((t) => say('en', 'table_name', t.table)));
        v.walks.forEach((w, i) => {
          const cands = ex.tables[i]!.candidates;
          expect(w.sockets).toEqual(cands.map((x) => x.socket));
          expect(w.rows.map((r) => [r[0]!.split(' ').slice(0, 2).join(' '), r[1]!.split(' ')[0], r[2]])).toEqual(
            cands.map((x) => [`socket ${x.socket}`, String(x.score), say('en', 'candidate_outcome', x.outcome)]),
          );
        });
        // Nothing closed: the Host's answer is the live group's, numbered the same way.
        expect(v.listener).toBe(e.listener);
        if (ex.group) {
          expect(ex.group.members[ex.group.explain.listener!]).toBe(ex.socket);
          expect(v.member).toBe(ex.group.explain.listener);
        }
      }
      // TCP: the lhash2 bucket from 5.0, the 32-bucket port-keyed listening_hash before.
      const first = v0(host, plan, evs[0]!);
      if (sim.opts.proto === 'tcp')
        expect(first).toMatch(/^[56]\./.test(sim.opts.kernel) ? /^lhash2 \(10\.0\.0\.1, 8080\)/ : /^listening_hash \(port-keyed, 32 buckets\)/);
      host.dispose();
      sim.dispose();
    }
  });

  it('leaves closed listeners out and keeps each socket tied to its listener number', () => {
    const sim = new DispatchSim({ ...base, listeners: 5 });
    sim.close(1);
    sim.setIncomingCpu(3, 2);
    const plan = planOf(sim);
    expect(plan.listenerOf).toEqual([0, 2, 3, 4]);
    // Listener 3 is socket 2, and only it sets SO_INCOMING_CPU (to 2).
    const cpus = callsOf(plan).flatMap((c) => (c.call === 'setsockopt' && 'incomingCpu' in c.opt ? [[c.fd, c.opt.incomingCpu]] : []));
    expect(cpus).toEqual([[2, 2]]);
    const host = new Host('6.18', plan.layout);
    for (const e of dispatched(sim, 10)) {
      const v = lookupView(plan, host.results(), host.lookup(hostPacket(plan, 'tcp', e.tuple, e.cpu, null)));
      expect(sim.rows).toContain(v.listener);
    }
    host.dispose();
    sim.dispose();
  });

  it('replays the closes in order, so the Host picks exactly what the live group picks', () => {
    const sim = new DispatchSim({ ...base, listeners: 6 });
    sim.close(1);
    sim.close(3);
    const h = sim.closeHistory();
    expect(h).toEqual({ order: [1, 3], joinAfterClose: false });
    const s = sim.summary();
    const plan = groupPlan({
      proto: 'tcp',
      bind: s.bind,
      port: s.port,
      secret: sim.opts.secret,
      program: null,
      members: sim.group.members(),
      closedOrder: h.order,
    });
    expect(plan.listenerOf).toEqual([0, 1, 2, 3, 4, 5]);
    expect(callsOf(plan).flatMap((c) => (c.call === 'close' ? [c.fd] : []))).toEqual([1, 3]);
    const host = new Host('6.18', plan.layout);
    for (const e of dispatched(sim, 30)) {
      const x = host.lookup(hostPacket(plan, 'tcp', e.tuple, e.cpu, null));
      // The live group answered this connection with e.listener (the model's Group).
      expect(x.socket).toBe(e.listener);
      // The scene's chips are the model's candidates, in list order, labelled by listener.
      const v = lookupView(plan, host.results(), x);
      v.walks.forEach((w, i) => {
        const c = x.tables[i]!.candidates;
        expect(w.chips).toEqual(c.map((k) => ({ label: `L${k.socket}`, score: k.score, chosen: k.socket === x.socket })));
      });
    }
    sim.join();
    expect(sim.closeHistory().joinAfterClose).toBe(true);
    host.dispose();
    sim.dispose();
  });

  it('reuseport_addr_any: the specific socket wins on 6.18; on 4.17 a later wildcard group hides it', () => {
    const plan = addrAnyPlan('tcp', base.secret);
    const tuple = { saddr: '127.0.0.1', sport: 40000, daddr: SERVER.addr, dport: SERVER.port };
    const now = new Host('6.18', plan.layout);
    const vNow = lookupView(plan, now.results(), now.lookup(hostPacket(plan, 'tcp', tuple, 0, null)));
    expect(vNow.socket).toBe(4);
    expect(vNow.walks[0]!.caption).toBe('lhash2 (127.0.0.1, 8888)');
    expect(vNow.refusals.join('\n')).toMatch(/socket 9: bind\(\) fails with EADDRINUSE/);
    const old = new Host('4.17', plan.layout);
    const exOld = old.lookup(hostPacket(plan, 'tcp', tuple, 0, null));
    const vOld = lookupView(plan, old.results(), exOld);
    expect(vOld.socket).not.toBe(4);
    expect(exOld.group!.members).toContain(vOld.socket);
    expect(vOld.walks[0]!.caption).toMatch(/^listening_hash/);
    // The walk returns at the first reuseport socket that beats the best score: a wildcard socket
    // listed before the specific one, which is never reached.
    expect(vOld.walks[0]!.sockets).not.toContain(4);
    now.dispose();
    old.dispose();
  });

  it('says the lookup in the language asked: a Chinese page gets no English sentence', () => {
    // The Chinese paste page once showed this card in English (the scene wrote English whatever lang said).
    const plan = addrAnyPlan('tcp', base.secret);
    const tuple = { saddr: '127.0.0.1', sport: 40000, daddr: SERVER.addr, dport: SERVER.port };
    const host = new Host('6.18', plan.layout);
    const ex = host.lookup(hostPacket(plan, 'tcp', tuple, 0, null));
    const zh = lookupView(plan, host.results(), ex, 'zh-CN');
    const en = lookupView(plan, host.results(), ex, 'en');
    const han = /\p{Script=Han}/u;
    const english = /\b(socket|receives|walked|fails with|no match|group \d+ member)\b/;
    const sentences = [zh.headline, zh.groupLine ?? '', ...zh.refusals, ...zh.walks.flatMap((w) => [...w.head, ...w.rows.map((r) => r[0]!)])];
    for (const s of sentences.filter((x) => x !== '' && x !== 'compute_score')) {
      expect(s).toMatch(han);
      expect(s).not.toMatch(english);
    }
    expect(en.headline).toMatch(/^Kernel 6\.18, TCP 127\.0\.0\.1:40000 → 127\.0\.0\.1:8888: \d+ tables? walked; socket 4 /);
    // The facts are the same in both: the receiving socket, its rows and scores.
    expect(zh.socket).toBe(en.socket);
    expect(zh.walks.map((w) => w.sockets)).toEqual(en.walks.map((w) => w.sockets));
    host.dispose();
  });

  it('payload programs read the datagram number; SK_REUSEPORT programs are refused before 4.19', () => {
    const sim = new DispatchSim({ ...base, proto: 'udp', program: { kind: 'payload_mod', modulus: 3 } });
    const g = new Group('6.18', {
      proto: 'udp',
      listeners: 6,
      bind: SERVER.addr,
      port: SERVER.port,
      keys: { v4: base.secret, v6Outer: 0, v6Inner: 0 },
      program: { kind: 'payload_mod', modulus: 3 },
    });
    for (const e of dispatched(sim, 9)) {
      expect(e.payload).toBe(e.conn);
      expect(e.listener).toBe(g.explain(e.tuple, e.cpu, e.conn).listener);
    }
    g.dispose();
    sim.dispose();
    expect(() => new DispatchSim({ ...base, kernel: '4.17', program: { kind: 'drop' } })).toThrow(/SK_REUSEPORT/);
    const drop = new DispatchSim({ ...base, kernel: '5.0', program: { kind: 'drop' } });
    expect(dispatched(drop, 3).every((e) => e.listener === null)).toBe(true);
    drop.dispose();
    const pass = new DispatchSim({ ...base, kernel: '6.18', program: { kind: 'pass' } });
    expect(dispatched(pass, 3).every((e) => e.listener !== null)).toBe(true);
    pass.dispose();
  });
});

function v0(
  host: Host,
  plan: ReturnType<typeof groupPlan>,
  e: { tuple: { saddr: string; sport: number; daddr: string; dport: number }; cpu: number; payload: number | null },
): string {
  return say('en', 'table_name', host.lookup(hostPacket(plan, host.results()[0]!.proto, e.tuple, e.cpu, e.payload)).tables[0]!.table);
}
