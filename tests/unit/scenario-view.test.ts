/**
 * The scenario cards' data: which figures a card lists (the ones that
 * happened), measured values beside simulated ones, and the queue depth
 * series turned per queue. Reports here are hand-made, not the model's.
 */
import { describe, expect, it } from 'vitest';
import { scenarioCards } from '../../src/scene/scenario-view';
import type { SimReport, Variant } from '../../src/model/sim';

const lat = { count: 2, meanUs: 1000, stddevUs: 10, p50Us: 900, p90Us: 1100, p99Us: 2000, p999Us: 2000, maxUs: 2000 };
function report(accepts: number[], o: Partial<SimReport['outcomes']> = {}): SimReport {
  return {
    partial: false,
    endUs: 3000,
    events: 10,
    keys: { v4: 0, v6Outer: 0, v6Inner: 0 },
    workers: accepts.map((a) => ({ accepts: a, requests: a, busyUs: 1, cpuShare: 0.5, wastedWakeups: 0, latency: lat })),
    listenerWorker: [],
    skew: { maxMin: 2, jain: 0.9, emptyShare: 0, maxShare: 0.66 },
    outcomes: { arrived: 3, done: 3, inService: 0, queued: 0, retrying: 0, reset: 0, failed: 0, synDrops: 0, migrated: 0, local: 1, ...o },
    acceptLatency: lat,
    requestLatency: lat,
    series: {
      bucketUs: 1000,
      accepts: [
        [1, 0],
        [0, 1],
        [1, 0],
      ],
      depth: [
        [1, 2],
        [0, 3],
        [0, 0],
      ],
      drops: [0, 0, 0],
      p50Us: [900, 0, 950],
      p99Us: [2000, 0, 1500],
    },
  };
}
const v = (id: string, accept: Variant['accept']): Variant => ({ id, accept, tcpMigrateReq: false });

describe('scenarioCards', () => {
  it('lists drops and resets only when a run had some', () => {
    const [quiet, loud] = scenarioCards([v('a', 'epoll'), v('b', 'reuseport')], [report([2, 1]), report([2, 1], { synDrops: 5 })]);
    expect(quiet!.figures.map((f) => f.key)).not.toContain('synDrops');
    expect(loud!.figures.find((f) => f.key === 'synDrops')?.sim).toBe(5);
    expect(loud!.figures.map((f) => f.key)).not.toContain('reset');
  });

  it('puts a recording beside the simulation for the variant it names, and only there', () => {
    const [a, b] = scenarioCards([v('a', 'epoll'), v('b', 'reuseport')], [report([2, 1]), report([1, 2])], { b: report([4, 7]) });
    expect(a!.workers.every((w) => w.measured === undefined)).toBe(true);
    expect(b!.workers.map((w) => [w.sim, w.measured])).toEqual([
      [1, 4],
      [2, 7],
    ]);
    expect(b!.figures.every((f) => 'measured' in f)).toBe(true);
  });

  it('turns the depth series per queue, and marks slices where no request finished', () => {
    const [c] = scenarioCards([v('a', 'reuseport')], [report([1, 1])]);
    expect(c!.depth).toEqual([
      [1, 0, 0],
      [2, 3, 0],
    ]);
    expect(c!.p99Ms[0]).toBe(2);
    expect(c!.p99Ms[1]).toBeNaN();
  });

  it("shows the share accepted on the SYN's CPU when a variant steers by CPU", () => {
    const [c] = scenarioCards([v('a', 'reuseport'), v('b', 'reuseport-incoming-cpu')], [report([1, 1]), report([1, 1])]);
    expect(c!.figures.find((f) => f.key === 'local')?.sim).toBeCloseTo(1 / 3);
  });

  it('skips a variant with no report (a stopped run)', () => {
    expect(scenarioCards([v('a', 'epoll'), v('b', 'reuseport')], [report([1, 1])]).map((c) => c.variant.id)).toEqual(['a']);
  });
});
