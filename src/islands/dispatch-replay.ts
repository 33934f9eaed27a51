/**
 * "Your server, replayed": the visualizer's part that loads a trace (a file
 * of the site's traces/, named by the `replay` attribute or URL parameter, or
 * one the reader picks) and says how the replay goes: records sent, how many
 * the model agrees on, and which it does not (listed, never hidden).
 */
import { parseHex32 } from '../hex';
import { checkTrace, MAX_TRACE_BYTES } from '../model/trace';
import { replayOf, type Replay, type ReplayTally } from '../scene/dispatch/replay';
import type { DispatchCtx } from './dispatch-dom';
import type { DispatchText } from './dispatch-text';
import { siteUrl } from './site';

/** The manifest's key for a curated trace (`public/traces/manifest.json`), if it names one. */
async function manifestKey(file: string): Promise<number | null> {
  const r = await fetch(siteUrl('traces/manifest.json'));
  if (!r.ok) return null;
  const m = (await r.json()) as { traces: { file: string; key?: string }[] };
  const k = m.traces.find((x) => x.file === file)?.key;
  return k === undefined ? null : (parseHex32(k) ?? null);
}

/** Checks parsed JSON as a trace and makes it a replay; throws a sentence naming the field at fault. */
function toReplay(value: unknown, name: string, key: number | null, t: DispatchText): Replay {
  const c = checkTrace(value);
  if (c.errors) throw new Error(t.replayInvalid(name, c.errors.slice(0, 3).join('; ')));
  const r = replayOf(c.trace, name, key);
  if ('refused' in r) throw new Error(t.replayRefused(name, r.refused.field, r.refused.problem));
  return r.replay;
}

/** A trace of the site's traces/ as a replay, with `key` or else the manifest's key for it (null: none known). */
export async function fetchReplay(file: string, key: number | undefined, t: DispatchText): Promise<Replay> {
  const url = siteUrl(`traces/${file}`);
  const r = await fetch(url);
  if (!r.ok) throw new Error(t.replayFetch(url, `${r.status} ${r.statusText}`));
  const value: unknown = await r.json();
  return toReplay(value, file, key ?? (await manifestKey(file)), t);
}

/** A file the reader picked, as a replay under `key` (the Settings secret); bounded in size. */
export async function readReplay(f: File, key: number | null, t: DispatchText): Promise<Replay> {
  if (f.size > MAX_TRACE_BYTES) throw new Error(t.replayTooBig(f.name, f.size / 2 ** 20, MAX_TRACE_BYTES / 2 ** 20));
  let value: unknown;
  try {
    value = JSON.parse(await f.text());
  } catch (e) {
    throw new Error(t.replayInvalid(f.name, (e as Error).message));
  }
  return toReplay(value, f.name, key, t);
}

/** The replay's controls (in Settings) and its status line (under the scene). */
export function replayPanel({ t, sim, dom, on }: DispatchCtx, start: (r: Replay | null) => void, fail: (msg: string) => void) {
  const fs = dom.settings.select('form').append('fieldset').attr('class', 'rl-dv-fs rl-dv-replay-fs');
  fs.append('legend').text(t.replayLegend);
  fs.append('p').attr('class', 'rl-hint').text(t.replayHint);
  const id = `${dom.canvas.node()!.id || 'rl-dv'}-replay-file`;
  fs.append('label').attr('for', id).text(t.replayFile);
  const input = fs.append('input').attr('id', id).attr('type', 'file').attr('accept', '.json,application/json');
  const stop = fs.append('button').attr('type', 'button').text(t.replayStop);
  const status = dom.stage.insert('p', '.rl-dv-stage-lookup').attr('class', 'rl-dv-replay').attr('role', 'status');
  const list = dom.stage.insert('p', '.rl-dv-stage-lookup').attr('class', 'rl-dv-replay-differs');
  on(input.node()!, 'change', () => {
    const f = (input.node() as HTMLInputElement).files?.[0];
    if (!f) return;
    readReplay(f, sim.opts.replay ? null : sim.opts.secret, t).then(start, (e: unknown) => fail((e as Error).message));
  });
  on(stop.node()!, 'click', () => start(null));
  const show = () => {
    const r = sim.opts.replay;
    const tally: ReplayTally | null = sim.replayTally;
    stop.property('hidden', !r);
    status.property('hidden', !r);
    list.property('hidden', !r || !tally?.disagreed.length);
    if (!r || !tally) return;
    status.text(t.replayStatus(r.name, r.trace.kernel.release, r.key, tally));
    list.text(tally.disagreed.length ? t.replayDiffers(tally.disagreed.slice(0, 20), tally.disagreed.length) : '');
  };
  show();
  return { show };
}
