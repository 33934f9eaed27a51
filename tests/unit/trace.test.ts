/**
 * The trace viewer's model layer and scene: a curated trace recorded on the
 * real 6.18 kernel is predicted choice for choice with its recovered key,
 * the batch path gives the same answers as explain, choices a program made
 * are predicted without the key and hash choices are not, and bad files are
 * refused naming the field.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { Predicted, checkTrace, predictTrace, type Trace } from '../../src/model/trace';
import { TRAIN_EVENTS, rows, summarize } from '../../src/scene/trace-view';
import { loadModelForTests } from './setup-model';

const manifest = JSON.parse(readFileSync('public/traces/manifest.json', 'utf8')) as { traces: { file: string; key?: string }[] };
function load(file: string): { trace: Trace; key?: number } {
  const checked = checkTrace(JSON.parse(readFileSync(`public/traces/${file}`, 'utf8')));
  if (!checked.trace) throw new Error(checked.errors.join('; '));
  const k = manifest.traces.find((t) => t.file === file)?.key;
  return { trace: checked.trace, key: k ? Number.parseInt(k, 16) : undefined };
}

describe('trace predictions', () => {
  beforeAll(loadModelForTests);

  it('every choice of the 8-listener TCP trace, by the batch path and by explain, equals the kernel’s', async () => {
    const { trace, key } = load('tcp-v4-specific-8.json');
    expect(key).toBeDefined();
    const batch = await predictTrace(trace, { key });
    const one = await predictTrace(trace, { key, batch: false });
    expect(Array.from(batch)).toEqual(Array.from(one));
    expect(Array.from(batch)).toEqual(trace.events.map((e) => e.listener));
    const s = summarize(trace, batch);
    expect(s.all).toEqual({ predicted: 1000, agreed: 1000, needsKey: 0 });
    expect(s.heldOut.predicted).toBe(1000 - TRAIN_EVENTS);
  });

  it('with another key the same trace disagrees (the agreement is not automatic)', async () => {
    const { trace, key } = load('tcp-v4-specific-8.json');
    const wrong = await predictTrace(trace, { key: (key! ^ 1) >>> 0 });
    expect(summarize(trace, wrong).all.agreed).toBeLessThan(300);
  });

  it('without the key a CPU program’s choices are predicted and a hash group’s are not', async () => {
    const cpu = load('udp-v4-bpf-cpu.json').trace;
    const p = await predictTrace(cpu, {});
    expect(summarize(cpu, p).all).toEqual({ predicted: cpu.events.length, agreed: cpu.events.length, needsKey: 0 });
    const hash = load('tcp-v4-specific-8.json').trace;
    const q = await predictTrace(hash, {});
    expect(Array.from(q).every((x) => x === Predicted.NeedsKey)).toBe(true);
  });

  it('closed listeners leave the uniform expectation to the open ones, and rows page through the events', () => {
    const { trace } = load('tcp-v4-closed-1-5.json');
    const s = summarize(trace);
    expect(s.expected).toBeCloseTo(1000 / 6);
    expect(s.bars[1]!.count).toBe(0);
    const r = rows(trace, undefined, 990, 50);
    expect(r.total).toBe(1000);
    expect(r.rows.map((x) => x.index)).toEqual([990, 991, 992, 993, 994, 995, 996, 997, 998, 999]);
  });

  it('a bad file is refused naming each field at fault', () => {
    const bad = JSON.parse(readFileSync('public/traces/tcp-v4-specific-8.json', 'utf8'));
    bad.events[7].listener = -1;
    bad.kernel = {};
    const r = checkTrace(bad);
    expect(r.errors?.join('\n')).toMatch(/\/events\/7\/listener/);
    expect(r.errors?.join('\n')).toMatch(/\/kernel: must have required property 'release'/);
  });

  it('cancelling stops the prediction', async () => {
    const { trace, key } = load('tcp-v4-specific-8.json');
    const ctl = new AbortController();
    ctl.abort();
    await expect(predictTrace(trace, { key, batch: false, signal: ctl.signal })).rejects.toThrow(/cancelled/);
  });
});
