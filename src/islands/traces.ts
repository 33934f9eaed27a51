/**
 * The trace viewer `<reuseport-traces>` (choose a curated trace or open your
 * own; recorded choices beside the model's, agreement, per-listener counts,
 * the layout, "explain" on any row) and the compact card
 * `<reuseport-trace src="tcp-v4-specific-8.json">` for chapters.
 */
import { select } from 'd3';
import { Group, loadModel } from '../model/index';
import { MAX_TRACE_BYTES, checkTrace, explainEvent, predictTrace, traceGroup, type Trace } from '../model/trace';
import { TRAIN_EVENTS, rows, spread, summarize } from '../scene/trace-view';
import { explainView } from '../scene/explain-view';
import { SHOWN_COMMAND, cutText } from '../scene/cut';
import { renderExplain } from '../render/explain-card';
import { renderTextTable } from '../render/table';
import { renderBars, renderCountsTable, renderRows } from '../render/trace-view';
import { hex32, parseHex32 } from '../hex';
import { defineIsland, hostOf, islandElement } from './element';
import { pageLang, siteUrl } from './site';
import { traceText, type TraceText } from './trace-text';

/** One entry of public/traces/manifest.json. */
interface ManifestEntry {
  file: string;
  kind: string;
  shows: string;
  key?: string;
  keyFrom?: string;
}

const PAGE = 50;

/** An agent command inside a sentence, such as `reuseport-agent verify --trace` (captured, for `split`). */
const AGENT_COMMAND = /(reuseport-agent [a-z]+(?: --[a-z-]+)*)/;

type WorkerAnswer = { trace?: Trace; errors?: string[]; notJson?: string };
type WorkerMessage = { head?: Trace; events?: Trace['events']; done?: true; errors?: string[]; notJson?: string };

/**
 * Parses and checks a dropped file in a worker (a large file would freeze the
 * page here); the trace arrives in slices, each quick to receive.
 */
function readInWorker(f: File): Promise<WorkerAnswer> {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL('../model/trace-worker.ts', import.meta.url), { type: 'module' });
    let trace: Trace | undefined;
    w.onmessage = (e: MessageEvent<WorkerMessage>) => {
      const m = e.data;
      if (m.head) trace = m.head;
      else if (m.events && trace) for (const ev of m.events) trace.events.push(ev);
      else {
        w.terminate();
        resolve(m.done ? { trace } : { errors: m.errors, notJson: m.notJson });
      }
    };
    w.onerror = (e) => {
      w.terminate();
      reject(new Error(e.message));
    };
    w.postMessage(f);
  });
}

/** The chart is drawn at its box's width (so its labels keep their size on a phone), within 280–640 px. */
function chartWidth(box: HTMLElement): number {
  return Math.max(280, Math.min(640, Math.round(box.clientWidth || 560)));
}

let uid = 0;

/** Where the site's traces are: `<base>traces/`. */
const tracesUrl = (): string => siteUrl('traces/');

/** The trace viewer page of the site in the page's language. */
const viewerUrl = (file: string): string => siteUrl(`traces/?trace=${encodeURIComponent(file)}`, true);

let manifest: Promise<ManifestEntry[]> | undefined;
function loadManifest(): Promise<ManifestEntry[]> {
  manifest ??= fetch(`${tracesUrl()}manifest.json`).then(async (r) => {
    if (!r.ok) throw new Error(`${r.status} ${r.statusText}`);
    return ((await r.json()) as { traces: ManifestEntry[] }).traces;
  });
  return manifest;
}

async function fetchTrace(file: string, t: TraceText): Promise<Trace> {
  const url = `${tracesUrl()}${file}`;
  const r = await fetch(url);
  if (!r.ok) throw new Error(t.fetchFailed(url, `${r.status} ${r.statusText}`));
  const checked = checkTrace(await r.json());
  if (checked.errors) throw new Error(`${t.invalid(file)} ${checked.errors.join('; ')}`);
  return checked.trace;
}

/** The full viewer. */
export async function mountTraces(el: HTMLElement, options: { trace?: string } = {}): Promise<() => void> {
  await loadModel();
  const t = traceText(pageLang(el));
  const id = `rl-traces-${++uid}`;
  const root = select(el).append('div').attr('class', 'rl-tv');
  const pick = root.append('div').attr('class', 'rl-tv-pick');
  pick.append('label').attr('for', `${id}-sel`).text(t.choose);
  const sel = pick.append('select').attr('id', `${id}-sel`);
  const fileWrap = pick.append('label').attr('class', 'rl-tv-file');
  fileWrap.append('span').text(`${t.orDrop}: `);
  const fileInput = fileWrap.append('input').attr('type', 'file').attr('accept', '.json,application/json');
  const status = root.append('p').attr('class', 'rl-tv-status').attr('role', 'status').attr('aria-live', 'polite');
  // "Your server, replayed": the visualizer replays a trace of the site by name; a file of one's own is picked there.
  const replayLine = root.append('p').attr('class', 'rl-tv-replay').property('hidden', true);
  const showReplay = (file: string | null) => {
    replayLine.property('hidden', false).selectAll('*').remove();
    if (file === null) replayLine.text(t.replayFile);
    else
      replayLine
        .text('')
        .append('a')
        .attr('href', siteUrl(`dispatch/?replay=${encodeURIComponent(file)}`, true))
        .text(t.replay);
  };
  // Idle, the progress row is invisible but keeps its height: shown and hidden around each prediction,
  // it moved the whole report down and up (a layout shift).
  const progress = root.append('div').attr('class', 'rl-tv-progress rl-tv-idle');
  const bar = progress.append('progress').attr('max', 1).attr('value', 0);
  const cancelBtn = progress.append('button').attr('type', 'button').text(t.cancel);
  const errors = root.append('div').attr('class', 'rl-errors').attr('role', 'alert');
  const body = root.append('div').attr('class', 'rl-tv-body');

  let abort: AbortController | undefined;
  let current: { trace: Trace; pred?: Int32Array; key?: number; keyFrom?: string; name: string } | undefined;
  let from = 0;
  let onlyMiss = false;

  cancelBtn.on('click', () => abort?.abort());

  const entries = await loadManifest().catch(() => [] as ManifestEntry[]);
  const traces = entries.filter((e) => e.kind === 'trace' || e.kind === 'bench');
  sel
    .selectAll('option')
    .data(traces)
    .join('option')
    .attr('value', (e) => e.file)
    .text((e) => `${e.file}: ${t.shows(e)}`);

  function draw(): void {
    body.html('');
    if (!current) return;
    const { trace: tr, pred } = current;
    const s = summarize(tr, pred);
    const meta = body.append('section').attr('class', 'rl-section').attr('aria-labelledby', `${id}-meta`);
    meta.append('h2').attr('id', `${id}-meta`).text(t.layout);
    const dl = meta.append('dl');
    const item = (k: string, v: string) => {
      dl.append('dt').text(k);
      const dd = dl.append('dd');
      // A command named in the sentence ("reuseport-agent verify --trace") breaks only between its words, never
      // inside "--trace"; as a whole it was wider than a phone's column and pushed the report past the card.
      for (const [i, part] of v.split(AGENT_COMMAND).entries()) {
        if (i % 2 === 0) {
          if (part) dd.append('span').text(part);
          continue;
        }
        for (const [j, word] of part.split(' ').entries()) {
          if (j) dd.append('span').text(' ');
          dd.append('span').attr('class', 'rl-tv-nowrap').text(word);
        }
      }
    };
    const g = tr.group;
    item(t.kernel, t.kernelLine(tr.kernel.release, tr.kernel.profile));
    item(t.group, t.groupLine(g));
    item(t.program, t.selection(g));
    if (tr.recorded) item(t.recorded, tr.recorded);
    if (tr.command) {
      dl.append('dt').text(t.command);
      // One box per argument, so a narrow column breaks the line between arguments, never inside "--listeners".
      // A command as long as the schema allows (64 Ki characters) is cut: the rest would be layout work for nothing.
      const cmd = dl.append('dd').attr('class', 'rl-tv-command');
      const { shown, left } = cutText(tr.command, SHOWN_COMMAND);
      for (const [i, word] of shown.split(' ').entries()) {
        if (i) cmd.append('span').text(' ');
        cmd.append('span').attr('class', 'rl-tv-arg').text(word);
      }
      if (left) cmd.append('span').attr('class', 'rl-hint').text(t.cutMore(left));
    }
    item(t.key, current.key === undefined ? t.keyNone : t.keyFromManifest(hex32(current.key), current.keyFrom));

    const fig = body.append('section').attr('class', 'rl-section');
    fig
      .append('p')
      .attr('class', 'rl-headline rl-tv-agree')
      .text(pred ? t.agreementAll(s.all, s.events) : '');
    if (pred && current.key !== undefined && !current.keyFrom) fig.append('p').attr('class', 'rl-tv-held').text(t.agreementHeld(s.heldOut, TRAIN_EVENTS));
    fig.append('p').text(t.spread(s));
    const chart = fig.append('div').attr('class', 'rl-tv-chart').node()!;
    renderBars(chart, s, t, chartWidth(chart));
    renderCountsTable(fig as never, s, t);

    const keyForm = fig.append('form').attr('class', 'rl-tv-keyform').attr('novalidate', '');
    keyForm.append('label').attr('for', `${id}-key`).text(t.keyLabel);
    const keyIn = keyForm
      .append('input')
      .attr('id', `${id}-key`)
      .attr('size', 12)
      .property('value', current.key === undefined ? '' : hex32(current.key));
    keyForm.append('button').attr('type', 'submit').text(t.apply);
    const keyErr = keyForm.append('span').attr('class', 'rl-hint').attr('role', 'alert');
    keyForm.on('submit', (ev: Event) => {
      ev.preventDefault();
      const k = parseHex32(String(keyIn.property('value')));
      if (k === undefined) {
        keyErr.text(t.keyBad);
        return;
      }
      if (current) void predict(current.trace, current.name, k, k === current.key ? current.keyFrom : undefined);
    });

    const ev = body.append('section').attr('class', 'rl-section');
    ev.append('h2').text(t.events);
    const tools = ev.append('div').attr('class', 'rl-tv-tools');
    const onlyLabel = tools.append('label');
    onlyLabel
      .append('input')
      .attr('type', 'checkbox')
      .property('checked', onlyMiss)
      .on('change', function () {
        onlyMiss = (this as HTMLInputElement).checked;
        from = 0;
        draw();
      });
    onlyLabel.append('span').text(` ${t.onlyMismatches}`);
    const page = rows(tr, pred, from, PAGE, onlyMiss);
    const nav = tools.append('span').attr('class', 'rl-tv-pager');
    nav
      .append('button')
      .attr('type', 'button')
      .text(t.prev)
      .property('disabled', from === 0)
      .on('click', () => {
        from = Math.max(0, from - PAGE);
        draw();
      });
    nav
      .append('span')
      .attr('aria-live', 'polite')
      .text(` ${t.page(page.total ? from + 1 : 0, Math.min(page.total, from + PAGE), page.total)} `);
    nav
      .append('button')
      .attr('type', 'button')
      .text(t.next)
      .property('disabled', from + PAGE >= page.total)
      .on('click', () => {
        from += PAGE;
        draw();
      });
    const wrap = ev.append('div').attr('class', 'rl-tv-tablewrap').attr('tabindex', 0).attr('role', 'region').attr('aria-label', t.events);
    const table = renderTextTable(wrap, {
      className: 'rl-table rl-tv-table',
      head: [t.seq, t.tuple, t.cpu, t.kernelPick, t.modelPick, t.agrees, t.explain],
      rows: [],
    });
    const explainBox = ev.append('div').attr('class', 'rl-tv-explain').attr('tabindex', '-1');
    renderRows(table.select<HTMLTableSectionElement>('tbody'), page.rows, t, (i) => {
      const e = tr.events[i]!;
      const group = new Group(tr.kernel.release, traceGroup(tr, current?.key ?? 0));
      try {
        const x = explainEvent(group, tr, i);
        explainBox.html('');
        explainBox.append('h3').text(`${t.explain}: #${e.seq ?? i}, ${t.kernelPick} ${e.listener}`);
        renderExplain(explainBox.append('div').node()!, explainView(x, pageLang(el)), 4);
        (explainBox.node() as HTMLElement).focus();
      } catch (err) {
        explainBox.text(err instanceof Error ? err.message : String(err));
      } finally {
        group.dispose();
      }
    });
  }

  async function predict(tr: Trace, name: string, key: number | undefined, keyFrom?: string): Promise<void> {
    abort?.abort();
    const ctl = new AbortController();
    abort = ctl;
    current = { trace: tr, key, keyFrom, name };
    from = 0;
    draw();
    progress.classed('rl-tv-idle', false);
    try {
      const pred = await predictTrace(tr, {
        key,
        signal: ctl.signal,
        onProgress: (d, n) => {
          bar.attr('value', d / n);
          status.text(t.predicting(d, n));
        },
      });
      if (ctl.signal.aborted || current?.trace !== tr) return;
      current = { trace: tr, key, keyFrom, name, pred };
      status.text(name);
      hostOf(el).dataset.state = 'ready';
      draw();
    } catch (err) {
      const cancelled = err instanceof DOMException && err.name === 'AbortError';
      if (cancelled) status.text(t.cancelled);
      else errors.text(err instanceof Error ? err.message : String(err));
      // A run another one replaced leaves the state to that one; otherwise the state ends here, never at 'loading'.
      if (abort === ctl) hostOf(el).dataset.state = cancelled ? 'ready' : 'error';
    } finally {
      if (abort === ctl) progress.classed('rl-tv-idle', true);
    }
  }

  async function openCurated(file: string): Promise<void> {
    errors.text('');
    hostOf(el).dataset.state = 'loading';
    status.text(t.loading(file));
    if (traces.find((e) => e.file === file)?.kind === 'bench') {
      abort?.abort();
      current = undefined;
      try {
        const r = await fetch(`${tracesUrl()}${file}`);
        if (!r.ok) throw new Error(t.fetchFailed(file, `${r.status} ${r.statusText}`));
        body.html('');
        renderBench(body, (await r.json()) as BenchFile, t);
        status.text(file);
        hostOf(el).dataset.state = 'ready';
      } catch (err) {
        hostOf(el).dataset.state = 'error';
        errors.text(err instanceof Error ? err.message : String(err));
      }
      return;
    }
    try {
      const tr = await fetchTrace(file, t);
      showReplay(tr.group.bind.includes(':') ? null : file);
      const entry = traces.find((e) => e.file === file);
      await predict(tr, file, entry?.key ? parseHex32(entry.key) : undefined, entry?.keyFrom);
    } catch (err) {
      hostOf(el).dataset.state = 'error';
      errors.text(err instanceof Error ? err.message : String(err));
    }
  }

  async function openFile(f: File): Promise<void> {
    errors.text('');
    hostOf(el).dataset.state = 'loading';
    // Every refusal ends in 'error', so an embedder waiting for a terminal state sees one.
    const refused = () => {
      hostOf(el).dataset.state = 'error';
      status.text('');
    };
    if (f.size > MAX_TRACE_BYTES) {
      errors.text(t.tooBig(f.size / 2 ** 20, MAX_TRACE_BYTES / 2 ** 20));
      return refused();
    }
    status.text(t.loading(f.name));
    const checked = await readInWorker(f).catch((err: unknown) => ({ notJson: err instanceof Error ? err.message : String(err) }) as WorkerAnswer);
    if (checked.notJson !== undefined) {
      errors.text(t.notJson(f.name, checked.notJson));
      return refused();
    }
    if (checked.errors) {
      errors.html('');
      errors.append('p').text(t.invalid(f.name));
      errors
        .append('ul')
        .selectAll('li')
        .data(checked.errors)
        .join('li')
        .text((d) => d);
      return refused();
    }
    showReplay(null);
    await predict(checked.trace!, f.name, undefined);
  }

  sel.on('change', () => void openCurated(String(sel.property('value'))));
  fileInput.on('change', function () {
    const f = (this as HTMLInputElement).files?.[0];
    if (f) void openFile(f);
  });
  const onDragOver = (e: DragEvent) => {
    e.preventDefault();
    el.classList.add('rl-tv-dragging');
  };
  const onDragLeave = () => el.classList.remove('rl-tv-dragging');
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    el.classList.remove('rl-tv-dragging');
    const f = e.dataTransfer?.files[0];
    if (f) void openFile(f);
  };
  el.addEventListener('dragover', onDragOver);
  el.addEventListener('dragleave', onDragLeave);
  el.addEventListener('drop', onDrop);

  const wanted = options.trace ?? new URLSearchParams(location.search).get('trace') ?? traces[0]?.file;
  if (wanted) {
    sel.property('value', wanted);
    // Mounted once the first trace is shown: the "Embed this" panel, added under the widget when it has mounted,
    // then comes below the report instead of being pushed down the screen by it (a layout shift).
    await openCurated(wanted);
  }

  return () => {
    abort?.abort();
    el.removeEventListener('dragover', onDragOver);
    el.removeEventListener('dragleave', onDragLeave);
    el.removeEventListener('drop', onDrop);
    root.remove();
  };
}

/** A `reuseport-agent bench` file (the fields shown). */
interface BenchFile {
  nproc: number;
  workers: number;
  clients: number;
  connections_per_client: number;
  accept: string;
  fork_over_reuseport?: number;
  modes: { mode: string; seconds: number; connections_per_second: number; per_worker: number[]; max_min_ratio: number; jain: number }[];
}

/** The benchmark view: per mode, time, rate and each worker's accepts, with a bar chart per mode. */
function renderBench(body: ReturnType<typeof select<HTMLDivElement, unknown>>, b: BenchFile, t: TraceText): void {
  const sec = body.append('section').attr('class', 'rl-section');
  sec.append('h2').text(t.benchTitle);
  sec.append('p').text(t.benchSetup(b.workers, b.clients, b.connections_per_client, b.accept, b.nproc));
  // On a phone the table scrolls sideways: its box takes the focus, so a keyboard can scroll it too.
  const wrap = sec.append('div').attr('class', 'rl-tv-tablewrap').attr('tabindex', 0).attr('role', 'region').attr('aria-label', t.benchTitle);
  renderTextTable(wrap, {
    head: t.benchCols,
    rowHeads: true,
    rows: b.modes.map((m) => [
      m.mode,
      m.seconds.toFixed(3),
      Math.round(m.connections_per_second).toLocaleString('en'),
      m.per_worker.join(', '),
      m.max_min_ratio.toFixed(2),
      m.jain.toFixed(3),
    ]),
  });
  for (const m of b.modes) {
    const s = spread(m.per_worker);
    sec.append('h3').text(`${m.mode}: ${t.benchPerWorker}`);
    const chart = sec.append('div').attr('class', 'rl-tv-chart').node()!;
    renderBars(chart, s, { ...t, listenerAxis: t.benchWorkerAxis }, chartWidth(chart));
  }
  // The file's `note` is the agent's English; the same comparison is written here from the file's CPU count.
  sec.append('p').attr('class', 'rl-hint').text(t.benchNote(b.nproc));
}

/** The compact card for a chapter: counts, agreement, a link to the viewer. */
export async function mountTraceCard(el: HTMLElement, options: { src: string }): Promise<() => void> {
  await loadModel();
  const t = traceText(pageLang(el));
  const root = select(el).append('div').attr('class', 'rl-tv rl-tv-card');
  const ctl = new AbortController();
  try {
    const [entries, tr] = await Promise.all([loadManifest(), fetchTrace(options.src, t)]);
    const entry = entries.find((e) => e.file === options.src);
    root
      .append('p')
      .attr('class', 'rl-headline')
      .text(`${options.src}${entry ? `: ${t.shows(entry)}` : ''}`);
    const key = entry?.key ? parseHex32(entry.key) : undefined;
    const pred = await predictTrace(tr, { key, signal: ctl.signal });
    const s = summarize(tr, pred);
    root.append('p').attr('class', 'rl-tv-agree').text(t.agreementAll(s.all, s.events));
    root.append('p').text(t.spread(s));
    const chart = root.append('div').attr('class', 'rl-tv-chart').node()!;
    renderBars(chart, s, t, chartWidth(chart));
    root.append('p').append('a').attr('href', viewerUrl(options.src)).text(`${t.open} →`);
    hostOf(el).dataset.state = 'ready';
  } catch (err) {
    if (!ctl.signal.aborted) {
      hostOf(el).dataset.state = 'error';
      root
        .append('p')
        .attr('role', 'alert')
        .attr('class', 'rl-errors')
        .text(err instanceof Error ? err.message : String(err));
    }
  }
  return () => {
    ctl.abort();
    root.remove();
  };
}

export const ReuseportTracesElement = islandElement(mountTraces, (el) => ({ trace: el.getAttribute('trace') ?? undefined }), ['trace', 'lang']);
export const ReuseportTraceElement = islandElement(mountTraceCard, (el) => ({ src: el.getAttribute('src') ?? '' }), ['src', 'lang']);

/** Registers `<reuseport-traces>` and `<reuseport-trace>` once. */
export function defineTraceElements(): void {
  defineIsland('reuseport-traces', ReuseportTracesElement);
  defineIsland('reuseport-trace', ReuseportTraceElement);
}
