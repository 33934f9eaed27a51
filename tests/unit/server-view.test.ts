/**
 * The "Your server" scene from the model's own answers: a pasted `ss -tanpe`
 * of one socket shared by four nginx workers read and diagnosed by the wasm
 * model, then turned into the verdict (worded from the sentence tables),
 * the sockets table, the per-worker bars and the links; per-worker counts
 * alone; and the queues of a report with samples.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadLookupSync } from '../../src/model/lookup';
import { Diagnose, diagnoseCounts, readServer } from '../../src/model/pkg-lookup/reuseport.js';
import { readObserveReport, type CountsDiagnosis, type Diagnosis, type ServerInput, type Snapshot } from '../../src/model/diagnose';
import { countsView, snapshotView } from '../../src/scene/server-view';
import { SERVER_TEXT } from '../../src/islands/server-text';

const wasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));
const shared = readFileSync(new URL('../fixtures/server/ss-tanpe-shared.txt', import.meta.url), 'utf8');
const reuseport = readFileSync(new URL('../fixtures/server/ss-tanpe-reuseport-4.txt', import.meta.url), 'utf8');
/** The initval scripts/server-fixture.mjs placed the reuseport fixture's connections under. */
const KEY = 0x5eedcafe;

beforeAll(() => loadLookupSync(readFileSync(wasm)));

function diagnose(text: string): { d: Diagnosis; snapshot: Snapshot } {
  const input = readServer(text, 0, '') as ServerInput;
  if (input.kind !== 'sockets') throw new Error(`read as ${input.kind}`);
  const h = new Diagnose('6.18', input.snapshot);
  const d = h.finish() as Diagnosis;
  h.free();
  return { d, snapshot: input.snapshot };
}

describe('a shared listener pasted from ss -tanpe', () => {
  it('is read on the port the connections reach, sshd left aside', () => {
    const input = readServer(shared, 0, '') as ServerInput;
    expect(input.kind).toBe('sockets');
    if (input.kind !== 'sockets') return;
    expect(input.snapshot.port).toBe(8080);
    expect(input.snapshot.listeners).toHaveLength(1);
    expect(input.snapshot.connections).toHaveLength(40);
    expect(input.listeningPorts).toEqual([22, 8080]);
  });

  it('gets the shared-listener verdict naming the workers, with the chapter and the scenario linked', () => {
    const { d, snapshot } = diagnose(shared);
    const v = snapshotView('en', SERVER_TEXT.en, d, snapshot, null);
    expect(v.verdict.kind).toBe('shared-listener');
    expect(v.verdict.sentence).toContain('One socket is served by several processes (1001, 1002, 1003, 1004)');
    expect(v.verdict.links.map((l) => l.path)).toEqual(['accept-models/', 'scenarios/shared-queue-under-load/', 'diagnose/#shared-listener']);
    // Not a group: the evidence is who holds the socket and who accepted, not a key.
    expect(v.verdict.evidence).toEqual(['One listening socket on the port, held by 5 processes; 4 of them accepted the 40 connections.']);
    // One socket, held by the master and the four workers.
    expect(v.sockets?.rows).toEqual([['73511', '0.0.0.0:8080', 'nginx 1004, nginx 1003, nginx 1002, nginx 1001, nginx 1000', '?', '0 / 511', '?']]);
    // Connections per worker, by pid: no band for a shared socket (no hashing happens).
    expect(v.workers?.counts).toEqual([31, 4, 3, 2]);
    expect(v.workers?.labels).toEqual(['1001', '1002', '1003', '1004']);
    expect(v.workers?.band).toBeNull();
    expect(v.queues).toBeNull();
  });

  it('reads in Chinese from the Chinese sentence table', () => {
    const { d, snapshot } = diagnose(shared);
    const v = snapshotView('zh-CN', SERVER_TEXT.zh, d, snapshot, null);
    expect(v.verdict.sentence).toContain('一个套接字由多个进程（1001, 1002, 1003, 1004）共同服务');
    expect(v.verdict.links[0]!.label).toBe('accept 模型');
  });
});

describe('four SO_REUSEPORT listeners pasted from ss -tanpe', () => {
  it('the labelled search over a part of the keys finds the key; finished with it, every connection agrees', () => {
    const input = readServer(reuseport, 0, '') as ServerInput;
    if (input.kind !== 'sockets') throw new Error(input.kind);
    const h = new Diagnose('6.18', input.snapshot);
    expect(h.searchable()).toBe(true);
    const part = h.search(KEY - 5000, KEY + 5000) as { count: number; values: number[] };
    expect(part.values).toContain(KEY);
    // The other parts of the space, as the other search workers would report them: nothing more.
    h.merge(0, new Uint32Array(0), 2 ** 32 - 10_000);
    const d = h.finish() as Diagnosis;
    h.free();
    expect(d.key?.initval).toBe('0x5eedcafe');
    expect(d.agreement).toEqual([120, 120]);
    expect(d.verdict.kind).toBe('hash-spread');
    const band = diagnoseCounts(Float64Array.from(d.workers.map((w) => w.connections)), 4) as CountsDiagnosis;
    const v = snapshotView('en', SERVER_TEXT.en, d, input.snapshot, band);
    expect(v.verdict.evidence).toContain('The model, under that key, sends 120 of 120 connections to the worker that holds them.');
    expect(v.workers?.band).toEqual(band.band);
    // ss shows no epoll sets, so a listener's slot stays unknown even with the key (the master holds every socket too).
    expect(v.sockets?.rows.map((r) => r[5])).toEqual(['?', '?', '?', '?']);
  });
});

describe('counts alone', () => {
  it('a pile-up on one worker of 101k connections is beyond hashing, with the band and the shape as evidence', () => {
    const counts = [91_000, 4_000, 3_500, 2_500];
    const c = diagnoseCounts(Float64Array.from(counts), undefined) as CountsDiagnosis;
    const v = countsView('en', SERVER_TEXT.en, c, counts, []);
    expect(v.verdict.kind).toBe('beyond-hash');
    expect(v.verdict.sentence).toMatch(/^Hashing does not give this: the busiest worker has 90(\.1)?% of 101,000 connections/);
    expect(v.verdict.evidence[0]).toMatch(/^Shape: one worker takes half or more/);
    expect(v.workers?.band?.mean).toBe(25_250);
    expect(v.workers?.labels).toEqual(['1', '2', '3', '4']);
    // One worker with most of them: the shared queue's accept models explain it.
    expect(v.verdict.links.map((l) => l.path)).toEqual(['accept-models/', 'scenarios/shared-queue-under-load/', 'diagnose/#beyond-hash']);
  });

  it('six connections as 3, 1, 1, 1 are what hashing often gives', () => {
    const c = diagnoseCounts(Float64Array.from([3, 1, 1, 1]), undefined) as CountsDiagnosis;
    const v = countsView('en', SERVER_TEXT.en, c, [3, 1, 1, 1], ['a', 'b', 'c', 'd']);
    expect(v.verdict.kind).not.toBe('beyond-hash');
    expect(v.workers?.labels).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('an observe report', () => {
  it('of a worker that stopped accepting: stalled-listener, with every queue over time', () => {
    const r = readObserveReport(readFileSync(new URL('../fixtures/server/observe-stalled.json', import.meta.url), 'utf8'));
    if (!r) throw new Error('not read as a report');
    expect(r.kernelRelease).toBe('6.18.0');
    const h = new Diagnose(r.kernelRelease, r.snapshot);
    const d = h.finish() as Diagnosis;
    h.free();
    const v = snapshotView('en', SERVER_TEXT.en, d, r.snapshot, null);
    expect(v.verdict.kind).toBe('stalled-listener');
    expect(d.verdict.listeners).toEqual(['51010']);
    expect(v.verdict.sentence).toContain('Listener 51010 holds a growing queue');
    expect(v.queues?.series.find((x) => x.id === '51010')?.queue.at(-1)).toBe(511);
    expect(v.queues?.series).toHaveLength(4);
    expect(v.queues?.note).toBe('In colour: listener 51010, the deepest queue (511 at most); the others in grey. Seconds across.');
  });

  it('is told from pasted text by its format', () => {
    expect(readObserveReport(shared)).toBeNull();
    expect(readObserveReport('{"format": "reuseport-trace-v1"}')).toBeNull();
  });
});

describe('a report with samples', () => {
  it('draws each listener queue over the samples', () => {
    const { d, snapshot } = diagnose(shared);
    const s: Snapshot = {
      ...snapshot,
      samples: [0, 1000, 2000].map((tMs, i) => ({ tMs, listeners: [{ id: '73511', queue: i * 5, drops: null }], workers: [] })),
    };
    const v = snapshotView('en', SERVER_TEXT.en, d, s, null);
    expect(v.queues?.series).toEqual([{ id: '73511', queue: [0, 5, 10] }]);
    expect(v.queues?.stepMs).toBe(1000);
  });
});
