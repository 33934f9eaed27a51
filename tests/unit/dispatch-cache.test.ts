import { beforeAll, describe, expect, it } from 'vitest';
import { Group } from '../../src/model/index';
import { SERVER } from '../../src/scene/dispatch/clients';
import { EventLog, type DispatchEvent } from '../../src/scene/dispatch/events';
import { DispatchSim, remapPhrase, type SimOptions } from '../../src/scene/dispatch/sim';
import { loadModelForTests } from './setup-model';

const base: SimOptions = {
  kernel: '6.18',
  proto: 'tcp',
  listeners: 8,
  wildcard: false,
  seed: 42,
  secret: 0xacf13568,
  clients: 50,
  rate: 400,
  cpus: 4,
  program: null,
};

describe('dispatch scene: answers kept per client', () => {
  beforeAll(loadModelForTests);

  it('after a close, every SYN carries what a fresh model group with the same close answers (the per-client record is not reused across a change)', () => {
    const sim = new DispatchSim(base);
    sim.advance(0.5); // fills the per-client records
    sim.close(3);
    const from = sim.log.nextSeq;
    sim.advance(0.5);
    const syns = sim.log.window(sim.log.nextSeq - 1, 10_000).filter((e) => e.seq >= from && e.kind === 'SYN');
    expect(syns.length).toBeGreaterThan(50);
    const g = new Group('6.18', { proto: 'tcp', listeners: 8, bind: SERVER.addr, port: SERVER.port, keys: { v4: base.secret, v6Outer: 0, v6Inner: 0 } });
    g.close(3);
    for (const e of syns) {
      const ex = g.explain(e.tuple, e.cpu);
      expect([e.listener, e.slot, e.hashHex, e.explain!.pick]).toEqual([ex.listener, ex.slot, ex.hash.hashHex, ex.pick]);
    }
    g.dispose();
    sim.dispose();
  });

  it('asks the model per datagram under a payload program (its answer depends on the datagram)', () => {
    const sim = new DispatchSim({ ...base, proto: 'udp', clients: 1, program: { kind: 'payload_mod', modulus: 3 } });
    for (let i = 0; i < 6; i++) sim.nextConnection();
    expect(sim.log.window(5, 6).map((e) => e.listener)).toEqual([0, 1, 2, 0, 1, 2]);
    sim.dispose();
  });

  it('counts connections to closed listeners, so the figures add up to every connection made', () => {
    const sim = new DispatchSim(base);
    sim.advance(1);
    sim.close(2);
    sim.advance(1);
    const listening = sim.rows.reduce((n, l) => n + (sim.counts[l] ?? 0), 0);
    expect(listening + sim.closedCounts + sim.dropped).toBe(sim.conns);
    expect(sim.closedCounts).toBeGreaterThan(0);
    sim.dispose();
  });

  it('says no listener is left when the last one closes, not that flows moved', () => {
    const sim = new DispatchSim({ ...base, listeners: 2 });
    sim.close(0);
    expect(remapPhrase(sim.lastRemap!, sim.rows.length)).toMatch(/now land on another listener/);
    sim.close(1);
    expect(remapPhrase(sim.lastRemap!, sim.rows.length)).toMatch(/no listener is left/);
    expect(sim.describe()).not.toMatch(/now land on another listener/);
    sim.dispose();
  });

  it('records the slide of the last member into the freed slot, from its old row to its new one', () => {
    const sim = new DispatchSim(base);
    sim.close(3);
    expect(sim.slide).toMatchObject({ listener: 7, from: 7.5 / 8, to: 3.5 / 7, u: 0 });
    expect(sim.rows).toEqual([0, 1, 2, 7, 4, 5, 6]);
    expect(sim.animateRows(DispatchSim.SLIDE_S / 2)).toBe(true);
    expect(sim.animateRows(DispatchSim.SLIDE_S)).toBe(false);
    sim.dispose();
  });
});

describe('event log', () => {
  it('keeps at most an eighth more than its cap between trims, and drops the oldest', () => {
    const log = new EventLog(80);
    const ev = (seq: number) => ({ seq }) as DispatchEvent;
    for (let i = 0; i < 1000; i++) {
      log.push([ev(i)]);
      expect(log.length).toBeLessThanOrEqual(90);
      expect(log.get(i)!.seq).toBe(i);
    }
    expect(log.nextSeq).toBe(1000);
    expect(log.firstSeq).toBeGreaterThanOrEqual(1000 - 90);
  });
});
