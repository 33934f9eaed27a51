import { beforeAll, describe, expect, it } from 'vitest';
import { FrameClock, type Scheduler } from '../../src/clock';
import { ephemeralRange, Group, NO_LISTENER } from '../../src/model/index';
import { makeClients, SERVER } from '../../src/scene/dispatch/clients';
import { EventLog, type DispatchEvent } from '../../src/scene/dispatch/events';
import { bandEdges, COL, hashToY } from '../../src/scene/dispatch/layout';
import { listenerMark, OKABE_ITO } from '../../src/scene/dispatch/palette';
import { bootSecret } from '../../src/scene/dispatch/rng';
import { DispatchSim, newFrame, selectClients, type SimOptions } from '../../src/scene/dispatch/sim';
import { DISPATCH_TEXT, dispatchText } from '../../src/islands/dispatch-text';
import { fairness } from '../../src/scene/dispatch/stats';
import { loadModelForTests } from './setup-model';

const base: SimOptions = {
  kernel: '6.18',
  proto: 'tcp',
  listeners: 8,
  wildcard: false,
  seed: 42,
  secret: 0xacf13568,
  clients: 200,
  rate: 100,
  cpus: 4,
  program: null,
};

describe('dispatch scene', () => {
  beforeAll(loadModelForTests);

  it('generates the same clients and boots from the same seed', () => {
    const ports = ephemeralRange('6.18');
    expect(makeClients(7, 50, 4, ports)).toEqual(makeClients(7, 50, 4, ports));
    expect(makeClients(7, 50, 4, ports)).not.toEqual(makeClients(8, 50, 4, ports));
    expect(bootSecret(7, 1)).toBe(bootSecret(7, 1));
    expect(bootSecret(7, 1)).not.toBe(bootSecret(7, 2));
  });

  it('puts packets on the path the model reported', () => {
    const sim = new DispatchSim(base);
    sim.advance(0.5);
    const syns = sim.log.window(sim.log.nextSeq - 1, 1000).filter((e) => e.kind === 'SYN');
    expect(syns.length).toBeGreaterThan(10);
    const g = new Group('6.18', { proto: 'tcp', listeners: 8, bind: SERVER.addr, port: SERVER.port, keys: { v4: 0xacf13568, v6Outer: 0, v6Inner: 0 } });
    for (const e of syns) {
      const ex = g.explain(e.tuple, e.cpu);
      expect([e.listener, e.slot, e.hashHex]).toEqual([ex.listener, ex.slot, ex.hash.hashHex]);
      // The SYN's last waypoint is its listener's row; its middle one is the hash on the range.
      const p = sim.path('SYN', e.client, hashToY(e.hash!), e.listener!);
      expect(p.pts[2]).toBe(COL.hash);
      expect(p.pts[3]).toBeCloseTo(ex.hash.hash / 2 ** 32);
      expect(p.pts.at(-1)).toBeCloseTo((sim.rowOf(e.listener!) + 0.5) / 8);
      expect(sim.rowOf(e.listener!)).toBe(ex.slot);
    }
    g.dispose();
    const f = sim.frame(newFrame());
    expect(f.n).toBeGreaterThan(0);
    for (let i = 0; i < f.n; i++) {
      expect(f.x[i]).toBeGreaterThanOrEqual(COL.client - 1e-6);
      expect(f.x[i]).toBeLessThanOrEqual(COL.listener + 1e-6);
    }
    sim.dispose();
  });

  it('labels listeners with Okabe-Ito colours, cycling with a fill style beyond 8', () => {
    expect(listenerMark(3)).toMatchObject({ colour: OKABE_ITO[3], fill: 'solid', label: 'L3' });
    expect(listenerMark(11)).toMatchObject({ colour: OKABE_ITO[3], fill: 'hollow', label: 'L11' });
    expect(listenerMark(null).label).toBe('none');
    expect(bandEdges(4)).toEqual([0, 0.25, 0.5, 0.75, 1]);
  });

  it('steps back and forward through the same events', () => {
    const sim = new DispatchSim(base);
    const seen: DispatchEvent[] = [];
    for (let i = 0; i < 7; i++) seen.push(sim.log.stepForward(() => sim.nextConnection())!);
    expect(seen.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(seen.slice(0, 3).map((e) => e.kind)).toEqual(['SYN', 'SYN-ACK', 'ACK']);
    const back = sim.log.stepBack()!;
    expect(back).toBe(seen[5]);
    const fwd = sim.log.stepForward(() => sim.nextConnection())!;
    expect(fwd).toBe(seen[6]);
    expect(sim.log.length).toBe(9); // three connections, nothing generated twice
    // A second run from the same seed gives the same events.
    const again = new DispatchSim(base);
    for (let i = 0; i < 7; i++) again.log.stepForward(() => again.nextConnection());
    expect(again.log.current()!.tuple).toEqual(fwd.tuple);
    expect(again.log.current()!.listener).toBe(fwd.listener);
    sim.dispose();
    again.dispose();
  });

  it('says a SYN-ACK goes to the client, once, in both languages', () => {
    // The step sentence read "Event 1: SYN-ACK from 198.19.…:56483, SYN-ACK from listener 5": the tuple is the client's.
    const sim = new DispatchSim(base);
    const [syn, synAck] = [sim.log.stepForward(() => sim.nextConnection())!, sim.log.stepForward(() => sim.nextConnection())!];
    expect(synAck.kind).toBe('SYN-ACK');
    const client = `${synAck.tuple.saddr}:${synAck.tuple.sport}`;
    const en = dispatchText('en').step(synAck);
    expect(en).toBe(`Event 1 (client ${client}): SYN-ACK from listener ${synAck.listener}.`);
    expect(dispatchText('zh-CN').step(synAck)).toBe(`第 1 个事件（客户端 ${client}）：监听套接字 ${synAck.listener} 回复 SYN-ACK。`);
    expect(dispatchText('en').step(syn)).toMatch(new RegExp(`^Event 0 \\(client ${client}\\): SYN to listener ${syn.listener}`));
    sim.dispose();
  });

  it('drops the oldest events beyond the cap and keeps the cursor valid', () => {
    const log = new EventLog(5);
    const ev = (seq: number) => ({ seq }) as DispatchEvent;
    log.push([0, 1, 2, 3].map(ev));
    log.seek(1);
    log.push([4, 5, 6].map(ev));
    expect(log.firstSeq).toBe(2);
    expect(log.cursor).toBe(2);
    expect(log.stepBack()!.seq).toBe(2);
  });

  it('counts moved flows after a close exactly as two independent model groups do', () => {
    for (const [kernel, proto, n, close] of [
      ['6.18', 'tcp', 8, 2],
      ['5.10', 'udp', 130, 5],
      ['6.12', 'tcp', 5, 4],
    ] as const) {
      const sim = new DispatchSim({ ...base, kernel, proto, listeners: n, clients: 500 });
      const change = sim.close(close);
      expect(change.kind).toBe('left');
      const keys = { v4: base.secret, v6Outer: 0, v6Inner: 0 };
      const spec = { proto, listeners: n, bind: SERVER.addr, port: SERVER.port, keys };
      const before = new Group(kernel, spec);
      const after = new Group(kernel, { ...spec, closed: [close] });
      let moved = 0;
      for (const c of sim.clients) {
        const t = { saddr: c.saddr, sport: c.sport, daddr: SERVER.addr, dport: SERVER.port };
        if (before.explain(t, c.cpu).listener !== after.explain(t, c.cpu).listener) moved++;
      }
      expect(sim.lastRemap!.moved.length).toBe(moved);
      expect(moved).toBeGreaterThan(0);
      before.dispose();
      after.dispose();
      sim.dispose();
    }
  });

  it('grows socks[] from 128 to 256 when the 129th member joins', () => {
    const sim = new DispatchSim({ ...base, listeners: 128 });
    expect(sim.summary().maxSocks).toBe(128);
    const c = sim.join();
    expect(c).toMatchObject({ kind: 'joined', listener: 128, effect: { kind: 'grew', from: 128, to: 256 } });
    expect(sim.summary().maxSocks).toBe(256);
    expect(sim.lastRemap!.what).toMatch(/grew from 128 to 256/);
    sim.dispose();
  });

  it("the flow map (the Host's batch lookup) agrees with a separately built group per client", () => {
    const sim = new DispatchSim({ ...base, incomingCpu: [{ listener: 1, cpu: 2 }] });
    const map = selectClients(sim.host, 'tcp', sim.clients);
    const g = new Group('6.18', {
      proto: 'tcp',
      listeners: base.listeners,
      bind: SERVER.addr,
      port: SERVER.port,
      keys: { v4: base.secret, v6Outer: 0, v6Inner: 0 },
      incomingCpu: [{ listener: 1, cpu: 2 }],
    });
    sim.clients.forEach((c, i) => {
      const l = g.explain({ saddr: c.saddr, sport: c.sport, daddr: SERVER.addr, dport: SERVER.port }, c.cpu).listener;
      expect(map[i] === NO_LISTENER ? null : map[i]).toBe(l);
    });
    g.dispose();
    sim.dispose();
  });

  it('computes max/min and Jain fairness', () => {
    expect(fairness([10, 10, 10, 10])).toMatchObject({ total: 40, expected: 10, maxMinRatio: 1, jain: 1 });
    const f = fairness([1, 3]);
    expect(f.maxMinRatio).toBe(3);
    expect(f.jain).toBeCloseTo(16 / (2 * 10));
    expect(fairness([0, 4]).maxMinRatio).toBe(Infinity);
    expect(fairness([]).jain).toBeNull();
  });

  it('the frame clock clamps dt, skips hidden frames and stops', () => {
    let cb: ((t: number) => void) | null = null;
    let hidden = false;
    const sched: Scheduler = {
      request: (f) => {
        cb = f;
        return 1;
      },
      cancel: () => {
        cb = null;
      },
      hidden: () => hidden,
    };
    const clock = new FrameClock({ scheduler: sched, maxDt: 100 });
    const dts: number[] = [];
    clock.subscribe((_, dt) => dts.push(dt));
    clock.start();
    cb!(1000);
    cb!(1016);
    hidden = true;
    cb!(1032);
    hidden = false;
    cb!(9000);
    cb!(9016);
    expect(dts).toEqual([0, 16, 0, 16]);
    clock.setVisible(false);
    cb!(9032);
    expect(dts.length).toBe(4);
    clock.setVisible(true);
    cb!(9040);
    expect(dts.at(-1)).toBe(0); // back on-screen: no jump
    clock.stop();
    expect(cb).toBeNull();
    expect(clock.running).toBe(false);
  });
});

describe('dispatch scene structure', () => {
  beforeAll(loadModelForTests);

  it('labels rows by slot, shows the capacity and one band per member', async () => {
    const { structure } = await import('../../src/scene/dispatch/structure');
    const sim = new DispatchSim({ ...base, listeners: 4, clients: 6 });
    sim.close(1, true);
    const s = structure(sim, DISPATCH_TEXT.en.structure);
    expect(s.selection).toBe('group');
    expect(s.bands).toBe(3);
    expect(s.rows.map((r) => [r.index, r.label])).toEqual([
      [0, 'L0'],
      [1, 'L3'],
      [2, 'L2'],
    ]);
    expect(s.rows.map((r) => r.y)).toEqual([1 / 6, 3 / 6, 5 / 6]);
    expect(s.headings.slots).toBe('socks[] 3/128');
    expect(s.clientLabels).toHaveLength(6);
    expect(sim.lastRemap!.what).toBe('Listener 1 closed; listener 3 moved from the last slot into socks[1]');
    sim.dispose();
  });

  it('keeps running with every listener closed: SYNs get a RST', () => {
    const sim = new DispatchSim({ ...base, listeners: 2 });
    sim.close(0);
    sim.close(1);
    sim.advance(0.2);
    const evs = sim.log.window(sim.log.nextSeq - 1, 100);
    expect(evs.length).toBeGreaterThan(0);
    expect(evs.every((e) => e.listener === null)).toBe(true);
    expect(evs.some((e) => e.kind === 'RST')).toBe(true);
    expect(fairness([]).n).toBe(0);
    sim.dispose();
  });

  it('describes the reservoir era without socks[]', async () => {
    const { structure } = await import('../../src/scene/dispatch/structure');
    const sim = new DispatchSim({ ...base, kernel: '3.9', listeners: 3 });
    const s = structure(sim, DISPATCH_TEXT.en.structure);
    expect([s.selection, s.maxSocks, s.bands]).toEqual(['reservoir', null, 0]);
    expect(sim.describe()).toMatch(/reservoir scan/);
    sim.dispose();
  });
});
