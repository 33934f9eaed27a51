import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkTrace, type Trace } from '../../src/model/trace';
import { replayOf, type Replay } from '../../src/scene/dispatch/replay';
import { DispatchSim, type SimOptions } from '../../src/scene/dispatch/sim';
import { AGENT, agentPresent } from '../agent';
import { loadModelForTests } from './setup-model';

const traces = fileURLToPath(new URL('../../public/traces/', import.meta.url));
const manifest = JSON.parse(readFileSync(`${traces}manifest.json`, 'utf8')) as { traces: { file: string; key?: string }[] };

function load(file: string): Trace {
  const c = checkTrace(JSON.parse(readFileSync(`${traces}${file}`, 'utf8')));
  if (!c.trace) throw new Error(c.errors.join('; '));
  return c.trace;
}

const base: SimOptions = { kernel: '6.18', proto: 'tcp', listeners: 8, wildcard: false, seed: 1, secret: 0, clients: 10, rate: 100, cpus: 4, program: null };

function replayed(r: Replay, n: number) {
  const sim = new DispatchSim({ ...base, replay: r });
  const evs = [];
  for (let i = 0; i < n; i++) evs.push(...sim.nextConnection());
  return { sim, syns: evs.filter((e) => e.kind === 'SYN' || e.kind === 'UDP') };
}

/**
 * The listener reuseport-agent predict gives each record of `file` (a separate program: the native model with the
 * trace's group and the manifest's key), the independent count the replay's tally must match.
 */
function predicted(t: Trace, key: string, n: number): (number | null)[] {
  const g = t.group;
  const args = [
    'predict',
    '--kernel',
    t.kernel.profile,
    '--proto',
    g.proto,
    '--listeners',
    String(g.listeners),
    '--secret',
    key,
    '--bind',
    `${g.bind}:${g.port}`,
  ];
  if (g.closed?.length) args.push('--closed', g.closed.join(','));
  const input = t.events
    .slice(0, n)
    .map((e) => `${e.saddr} ${e.sport} ${e.daddr} ${e.dport}`)
    .join('\n');
  return execFileSync(AGENT, args, { input, encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { listener: number | null }).listener);
}

describe('dispatch: your server, replayed', () => {
  beforeAll(loadModelForTests);

  it('sends every record to the listener the kernel chose, in file order, then stops', () => {
    const t = load('tcp-v4-closed-1-5.json');
    const r = replayOf(t, 'tcp-v4-closed-1-5.json', null);
    if (!('replay' in r)) throw new Error('refused');
    const { sim, syns } = replayed(r.replay, 40);
    expect(syns.map((e) => [e.tuple.saddr, e.tuple.sport, e.listener])).toEqual(t.events.slice(0, 40).map((e) => [e.saddr, e.sport, e.listener]));
    // The group is the trace's: 8 listeners with 1 and 5 closed, so 6 rows.
    expect(sim.rows.length).toBe(6);
    // Without the key the model is not asked: nothing agrees, nothing differs, every record is unchecked.
    expect(sim.replayTally).toMatchObject({ sent: 40, agreed: 0, disagreed: [], unchecked: 40 });
    sim.dispose();
    const all = replayed(r.replay, t.events.length + 5);
    expect(all.syns.length).toBe(t.events.length);
    expect(all.sim.replayDone).toBe(true);
    expect(all.sim.nextConnection()).toEqual([]);
    all.sim.dispose();
  });

  it.runIf(agentPresent())('checks each record against the model: the tally is the count of records predict agrees on', () => {
    for (const [file, key] of [
      ['tcp-v4-closed-1-5.json', manifest.traces.find((x) => x.file === 'tcp-v4-closed-1-5.json')!.key!],
      // A wrong key: the model's answers are for another boot, and most records differ (shown, not hidden).
      ['tcp-v4-specific-8.json', '0x12345678'],
    ] as const) {
      const t = load(file);
      const n = 300;
      const want = predicted(t, key, n);
      const agree = want.filter((l, i) => l === t.events[i]!.listener).length;
      const r = replayOf(t, file, Number.parseInt(key, 16));
      if (!('replay' in r)) throw new Error('refused');
      const { sim, syns } = replayed(r.replay, n);
      expect(sim.replayTally!.agreed, file).toBe(agree);
      expect(sim.replayTally!.disagreed.length, file).toBe(n - agree);
      expect(syns.map((e) => e.replay!.model)).toEqual(want);
      if (key === '0x12345678') expect(n - agree).toBeGreaterThan(n / 2);
      sim.dispose();
    }
  });

  it('refuses an IPv6 trace, naming the field', () => {
    const r = replayOf(load('tcp-v6-wildcard-netns.json'), 'tcp-v6-wildcard-netns.json', null);
    expect(r).toEqual({ refused: { field: '/group/bind', problem: 'ipv6' } });
  });
});
