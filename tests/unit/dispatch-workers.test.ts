import { beforeAll, describe, expect, it } from 'vitest';
import { DISPATCH_TEXT, tourFacts } from '../../src/islands/dispatch-text';
import { COL } from '../../src/scene/dispatch/layout';
import { DispatchSim, type SimOptions } from '../../src/scene/dispatch/sim';
import { structure } from '../../src/scene/dispatch/structure';
import { queueBarMax, ROW_PARTS, TOUR_STEP_IDS, tourSpot } from '../../src/scene/dispatch/tour';
import { acceptRate, drainQueues, formatRates, parseRates } from '../../src/scene/dispatch/workers';
import { loadModelForTests } from './setup-model';

const base: SimOptions = {
  kernel: '6.18',
  proto: 'tcp',
  listeners: 8,
  wildcard: false,
  seed: 7,
  secret: 0xacf13568,
  clients: 2000,
  rate: 80,
  cpus: 4,
  program: null,
};

/** Runs the scene `s` simulated seconds in steps of 0.1 s. */
const run = (sim: DispatchSim, s: number) => {
  for (let i = 0; i < s * 10; i++) sim.advance(0.1);
};

describe('workers: service rates', () => {
  it('reads a rates list of numbers from 0.1 to 4 and names the first entry that is not one', () => {
    expect(parseRates('1,1,0.5,1')).toEqual({ rates: [1, 1, 0.5, 1] });
    expect(parseRates(' 2 , .5 ')).toEqual({ rates: [2, 0.5] });
    expect(parseRates('1,0,1')).toEqual({ error: { entry: 2, value: '0' } });
    expect(parseRates('1,9')).toEqual({ error: { entry: 2, value: '9' } });
    expect(parseRates('fast')).toEqual({ error: { entry: 1, value: 'fast' } });
    expect(parseRates('1,,1')).toEqual({ error: { entry: 2, value: '' } });
    expect(parseRates('1e0')).toEqual({ error: { entry: 1, value: '1e0' } });
    expect(parseRates('1,1,1', 2)).toEqual({ error: { entry: 0, value: '3' } });
  });

  it('writes the list back without the trailing normal workers, or nothing when all are normal', () => {
    expect(formatRates([1, 0.5, 1, 1])).toBe('1,0.5');
    expect(formatRates([1, 1])).toBeNull();
    expect(formatRates([])).toBeNull();
  });

  it('a worker accepts headroom × fair share × its rate, and nothing when stalled', () => {
    expect(acceptRate(80, 8, 1.2, { rate: 1, stalled: false })).toBeCloseTo(12);
    expect(acceptRate(80, 8, 1.2, { rate: 0.5, stalled: false })).toBeCloseTo(6);
    expect(acceptRate(80, 8, 1.2, { rate: 2, stalled: true })).toBe(0);
    expect(acceptRate(80, 0, 1.2, { rate: 1, stalled: false })).toBeCloseTo(96);
  });

  it('draining never takes a queue below zero, leaves a stalled worker’s queue as it is, and counts what it took', () => {
    const q = [5, 5, 0.5];
    const acc = [0, 0, 0];
    drainQueues(q, acc, [0, 1, 2], 30, 1, (l) => ({ rate: 1, stalled: l === 1 }), 1);
    expect(q).toEqual([0, 5, 0]);
    expect(acc).toEqual([5, 0, 0.5]);
  });
});

describe('workers in the scene', () => {
  beforeAll(loadModelForTests);

  it('a stalled worker’s queue grows for as long as it is stalled while the others stay bounded; the hash keeps sending it its share', () => {
    const sim = new DispatchSim(base);
    sim.setStalled(3, true);
    run(sim, 30);
    const at30 = sim.queue[3]!;
    const sentAt30 = sim.counts[3]!;
    run(sim, 30);
    expect(sim.accepted[3]).toBe(0);
    expect(sim.counts[3]! - sentAt30, 'the model keeps choosing listener 3').toBeGreaterThan(200);
    expect(sim.queue[3]!, 'its queue grew between 30 s and 60 s').toBeGreaterThan(at30 + 200);
    for (const l of sim.rows.filter((r) => r !== 3)) expect(sim.queue[l]!, `listener ${l}'s queue stays short`).toBeLessThan(25);
    expect(sim.describe()).toContain('worker L3 stalled');
    const at60 = sim.queue[3]!;
    sim.setStalled(3, false);
    run(sim, 120);
    expect(sim.queue[3]!, 'resumed, it works the queue down (at 1.2 times its share, so slowly)').toBeLessThan(at60 - 100);
    sim.dispose();
  });

  it('a slow worker’s queue grows faster than a normal one’s, and a restart keeps the rates but not the stalls', () => {
    const sim = new DispatchSim({ ...base, rates: [1, 1, 0.5] });
    sim.setStalled(5, true);
    run(sim, 60);
    const normal = Math.max(...sim.rows.filter((l) => l !== 2 && l !== 5).map((l) => sim.queue[l]!));
    expect(sim.queue[2]!).toBeGreaterThan(normal + 100);
    expect(sim.accepted[2]!).toBeGreaterThan(0);
    expect(sim.describe()).toContain('worker L2 at 0.5× rate');
    const rows = structure(sim, DISPATCH_TEXT.en.structure).rows;
    expect(rows[2]!.tag).toBe('×0.5');
    expect(rows[5]).toMatchObject({ stalled: true, tag: '×0' });
    sim.rebuild();
    expect(sim.worker(2)).toEqual({ rate: 0.5, stalled: false });
    expect(sim.worker(5)).toEqual({ rate: 1, stalled: false });
    sim.dispose();
  });

  it('the workers are named in both languages’ summaries', () => {
    const sim = new DispatchSim(base);
    sim.setRate(1, 0.25);
    sim.setStalled(4, true);
    run(sim, 5);
    expect(DISPATCH_TEXT.en.summary(sim)).toMatch(/worker L1 at 0\.25× rate, \d+ queued, \d+ accepted, worker L4 stalled/);
    expect(DISPATCH_TEXT.zh.summary(sim)).toMatch(/工作进程 L1 以 0\.25 倍速率服务.*工作进程 L4 卡住/);
    sim.dispose();
  });
});

describe('the tour', () => {
  beforeAll(loadModelForTests);
  const box = { left: 12, top: 44, width: 774, height: 440 };
  const input = { box, width: 900, rows: 8, row: 6, stalledRow: -1, stallButtons: true };

  it('has six steps, each highlighting a rectangle inside the canvas at least 18 px high', () => {
    expect(TOUR_STEP_IDS).toEqual(['hash', 'slot', 'socks', 'listener', 'queue', 'stalled']);
    for (const step of TOUR_STEP_IDS) {
      for (const rows of [8, 1024]) {
        const r = tourSpot(step, { ...input, rows, row: Math.min(6, rows - 1) });
        expect(r.x, step).toBeGreaterThanOrEqual(1);
        expect(r.x + r.w, step).toBeLessThanOrEqual(899);
        expect(r.h, step).toBeGreaterThanOrEqual(18);
      }
    }
  });

  it('each step covers its part: the hash column, the chosen row from the hash to socks[], socks[], the listener box, its queue', () => {
    const X = (u: number) => box.left + u * box.width;
    const rowTop = box.top + (6 * box.height) / 8;
    const rowBottom = rowTop + box.height / 8;
    const covers = (r: { x: number; y: number; w: number; h: number }, x: number, y0 = rowTop, y1 = rowBottom) =>
      r.x <= x && x <= r.x + r.w && r.y <= y0 + 0.01 && y1 - 0.01 <= r.y + r.h;
    expect(covers(tourSpot('hash', input), X(COL.hash), box.top, box.top + box.height)).toBe(true);
    const narrow = { ...input, box: { left: 12, top: 44, width: 308, height: 314 }, width: 358 };
    const h = tourSpot('hash', narrow);
    expect(h.x + h.w, 'on a phone the hash stops short of socks[]').toBeLessThan(12 + COL.slot * 308 - 14);
    const slot = tourSpot('slot', input);
    expect(covers(slot, X(COL.hash)) && covers(slot, X(COL.slot))).toBe(true);
    expect(slot.h).toBeCloseTo(box.height / 8);
    expect(covers(tourSpot('socks', input), X(COL.slot), box.top, box.top + box.height)).toBe(true);
    const lis = tourSpot('listener', input);
    expect(covers(lis, X(COL.listener) + 8) && covers(lis, X(COL.listener) + ROW_PARTS.stall + 2)).toBe(true);
    const q = tourSpot('queue', input);
    expect(covers(q, X(COL.listener) + ROW_PARTS.queue) && covers(q, X(COL.listener) + ROW_PARTS.queue + queueBarMax(900, X(COL.listener)))).toBe(true);
    const st = tourSpot('stalled', { ...input, stalledRow: 2 });
    expect(covers(st, X(COL.listener), box.top + (2 * box.height) / 8, box.top + (3 * box.height) / 8)).toBe(true);
  });

  it('says the model’s numbers for the SYN it is about, in both languages', () => {
    const sim = new DispatchSim({ ...base, clients: 50 });
    const e = sim.nextConnection()[0]!;
    const f = tourFacts(sim, e, null, false);
    expect(f).toMatchObject({ pick: 'hash', n: 8, slot: e.slot, listener: `L${e.listener}`, hashHex: e.hashHex });
    const p = e.explain!.pick as { productHex: string; scaled: number };
    expect(DISPATCH_TEXT.en.tourSays('slot', f)).toContain(`0x${e.hashHex} × 8 = 0x${p.productHex}, >> 32 = ${p.scaled}`);
    expect(DISPATCH_TEXT.zh.tourSays('slot', f)).toContain(`0x${e.hashHex} × 8 = 0x${p.productHex}，>> 32 = ${p.scaled}`);
    for (const step of TOUR_STEP_IDS)
      for (const t of [DISPATCH_TEXT.en, DISPATCH_TEXT.zh]) {
        expect(t.tourStepTitle(step, f).length).toBeGreaterThan(0);
        expect(t.tourSays(step, f)).not.toMatch(/undefined|null|NaN/);
      }
    sim.dispose();
  });

  it('on kernel 3.9 it says there is no slot and no socks[] yet', () => {
    const sim = new DispatchSim({ ...base, kernel: '3.9', listeners: 4, clients: 20 });
    const e = sim.nextConnection()[0]!;
    const f = tourFacts(sim, e, null, false);
    expect(f.pick).toBe('reservoir');
    expect(DISPATCH_TEXT.en.tourSays('slot', f)).toContain('reservoir sampling');
    expect(DISPATCH_TEXT.en.tourStepTitle('slot', f)).toBe('No slot: the reservoir scan');
    expect(DISPATCH_TEXT.zh.tourSays('socks', f)).toContain('没有 socks[]');
    sim.dispose();
  });
});
