import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { Group } from '../../src/model/index';
import { Host, loadLookupSync } from '../../src/model/lookup';
import { say } from '../../src/model/messages';
import { SERVER } from '../../src/scene/dispatch/clients';
import { addrAnyPlan, groupPlan, hostPacket, lookupView } from '../../src/scene/dispatch/lookup';

import { DispatchSim, RefusedCall, type SimOptions } from '../../src/scene/dispatch/sim';
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
  return groupPlan(sim.host.results(), sim.opts.proto, s.bind, s.port);
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
      const host = sim.host;
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
      sim.dispose();
    }
  });

  it("the scene's controls are calls on its Host: close, then SO_INCOMING_CPU on and off", () => {
    const sim = new DispatchSim({ ...base, listeners: 5 });
    sim.close(1);
    sim.setIncomingCpu(3, 2);
    const calls = sim.host.calls().calls;
    // The group shorthand's calls for five listeners, then exactly the controls' calls.
    expect(calls.slice(-2)).toEqual([
      { call: 'close', fd: 1 },
      { call: 'setsockopt', fd: 3, opt: { incomingCpu: 2 } },
    ]);
    expect(sim.members()[3]!.incomingCpu).toBe(2);
    expect(sim.summary().incomingCpu).toBe(1);
    // Unsetting is setsockopt(-1): the kernel reads an int.
    sim.setIncomingCpu(3, undefined);
    expect(sim.host.calls().calls.at(-1)).toEqual({ call: 'setsockopt', fd: 3, opt: { incomingCpu: 0xffffffff } });
    expect(sim.members()[3]!.incomingCpu).toBe(-1);
    expect(sim.summary().incomingCpu).toBe(0);
    const plan = planOf(sim);
    expect(plan.listenerOf).toEqual([0, 1, 2, 3, 4]);
    expect(plan.facts).toMatchObject({ sockets: 5, closed: 1 });
    for (const e of dispatched(sim, 10)) {
      const v = lookupView(plan, sim.host.results(), sim.host.lookup(hostPacket(plan, 'tcp', e.tuple, e.cpu, null)));
      expect(sim.rows).toContain(v.listener);
      expect(v.listener).toBe(e.listener);
    }
    // A second close of the same socket is the kernel's EBADF, not a scene error.
    expect(() => sim.close(1)).toThrow(RefusedCall);
    try {
      sim.close(1);
    } catch (e) {
      expect((e as RefusedCall).refusal.errno).toBe('EBADF');
    }
    sim.dispose();
  });

  it('a listener that joins after a close: the scene, its lookup and a separately built group agree', () => {
    // The earlier scene rebuilt a layout for the lookup from the group's state, which could not say
    // "joined after a close", and left closed listeners out. Now the panel asks the scene's Host.
    const sim = new DispatchSim({ ...base, listeners: 6 });
    sim.close(1);
    const c = sim.join();
    // By hand from reuseport_detach_sock and reuseport_add_sock: closing slot 1 moves the last
    // member (5) into it; the new socket (fd 6) is appended at slot 5.
    expect(c).toMatchObject({ kind: 'joined', listener: 6, slot: 5 });
    expect(sim.rows).toEqual([0, 5, 2, 3, 4, 6]);
    // An independent path: the model's group type, changed by the same operations (no Host).
    const g = new Group('6.18', { proto: 'tcp', listeners: 6, bind: SERVER.addr, port: SERVER.port, keys: { v4: base.secret, v6Outer: 0, v6Inner: 0 } });
    g.close(1);
    g.join();
    const plan = planOf(sim);
    for (const e of dispatched(sim, 40)) {
      expect(e.listener).toBe(g.explain(e.tuple, e.cpu).listener);
      const x = sim.host.lookup(hostPacket(plan, 'tcp', e.tuple, e.cpu, null));
      expect(x.socket).toBe(e.listener);
      const v = lookupView(plan, sim.host.results(), x);
      v.walks.forEach((w, i) => {
        const k = x.tables[i]!.candidates;
        expect(w.chips).toEqual(k.map((q) => ({ label: `L${q.socket}`, score: q.score, chosen: q.socket === x.socket })));
      });
    }
    g.dispose();
    sim.dispose();
  });

  it('a new secret re-hashes the scene and its lookup alike', () => {
    const sim = new DispatchSim({ ...base, listeners: 7 });
    const secret = 0x0badf00d;
    sim.setSecret(secret);
    const g = new Group('6.18', { proto: 'tcp', listeners: 7, bind: SERVER.addr, port: SERVER.port, keys: { v4: secret, v6Outer: 0, v6Inner: 0 } });
    const plan = planOf(sim);
    for (const e of dispatched(sim, 30)) {
      expect(e.listener).toBe(g.explain(e.tuple, e.cpu).listener);
      expect(sim.host.lookup(hostPacket(plan, 'tcp', e.tuple, e.cpu, null)).socket).toBe(e.listener);
    }
    g.dispose();
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
    // The attach is a setsockopt the kernel refuses: the scene cannot have that setting.
    expect(() => new DispatchSim({ ...base, kernel: '4.17', program: { kind: 'drop' } })).toThrow(RefusedCall);
    try {
      new DispatchSim({ ...base, kernel: '4.17', program: { kind: 'drop' } });
    } catch (e) {
      const r = e as RefusedCall;
      expect(r.call).toMatchObject({ call: 'setsockopt', opt: { attachReuseport: { kind: 'drop' } } });
      expect([r.refusal.errno, say('en', 'refusal_rule', r.refusal.rule)]).toEqual(['EINVAL', expect.stringMatching(/SK_REUSEPORT/)]);
    }
    const drop = new DispatchSim({ ...base, kernel: '5.0', program: { kind: 'drop' } });
    expect(dispatched(drop, 3).every((e) => e.listener === null)).toBe(true);
    drop.dispose();
    const pass = new DispatchSim({ ...base, kernel: '6.18', program: { kind: 'pass' } });
    expect(dispatched(pass, 3).every((e) => e.listener !== null)).toBe(true);
    pass.dispose();
  });
});

function v0(
  host: Pick<Host, 'lookup' | 'results'>,
  plan: ReturnType<typeof groupPlan>,
  e: { tuple: { saddr: string; sport: number; daddr: string; dport: number }; cpu: number; payload: number | null },
): string {
  return say('en', 'table_name', host.lookup(hostPacket(plan, host.results()[0]!.proto, e.tuple, e.cpu, e.payload)).tables[0]!.table);
}
