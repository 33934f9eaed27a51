/**
 * Draws a trace summary: per-listener bars against the uniform expectation
 * (SVG, with a table as its text equivalent), the recording's facts, a page
 * of event rows, and a benchmark file's modes.
 */
import { scaleBand, scaleLinear, type Selection } from 'd3';
import { chartSvg } from './svg';
import { spread, type Spread, type TraceRow } from '../scene/trace-view';
import { renderTextTable } from './table';

/** The words these views say (the catalogue says them: ui.trace.* of messages/*.json, through islands/trace-text.ts). */
export interface TraceViewText {
  barsLabel: (s: Spread) => string;
  listenerAxis: string;
  countsTable: string;
  listener: string;
  count: string;
  vsExpected: string;
  needsKey: string;
  noSocket: string;
  yes: string;
  no: string;
  explain: string;
  explainRow: (seq: number) => string;
}

/** The bar chart of counts per listener, with the expectation as a dashed line; returns the SVG. */
export function renderBars(parent: HTMLElement, s: Spread, t: TraceViewText, width = 560): SVGSVGElement {
  const height = 150;
  const m = { top: 10, right: 8, bottom: 28, left: 44 };
  const svg = chartSvg(parent, 'rl-tv-bars', width, height, t.barsLabel(s));
  const x = scaleBand<number>()
    .domain(s.bars.map((b) => b.listener))
    .range([m.left, width - m.right])
    .padding(0.15);
  const top = Math.max(s.expected, ...s.bars.map((b) => b.count)) * 1.1 || 1;
  const y = scaleLinear()
    .domain([0, top])
    .range([height - m.bottom, m.top])
    .nice();
  svg
    .append('g')
    .selectAll('rect')
    .data(s.bars)
    .join('rect')
    .attr('x', (b) => x(b.listener)!)
    .attr('width', x.bandwidth())
    .attr('y', (b) => y(b.count))
    .attr('height', (b) => y(0) - y(b.count))
    .attr('fill', '#0072b2');
  svg
    .append('line')
    .attr('class', 'rl-tv-expect')
    .attr('x1', m.left)
    .attr('x2', width - m.right)
    .attr('y1', y(s.expected))
    .attr('y2', y(s.expected))
    .attr('stroke', '#000')
    .attr('stroke-dasharray', '4 3');
  const ticks = y.ticks(4);
  const axis = svg.append('g').attr('font-size', 10).attr('fill', '#333');
  axis
    .selectAll('text.y')
    .data(ticks)
    .join('text')
    .attr('class', 'y')
    .attr('x', m.left - 4)
    .attr('y', (d) => y(d) + 3)
    .attr('text-anchor', 'end')
    .text((d) => String(d));
  // Listener labels: every one when they fit, else every k-th.
  const every = Math.max(1, Math.ceil(s.bars.length / Math.floor((width - m.left) / 22)));
  axis
    .selectAll('text.x')
    .data(s.bars.filter((b) => b.listener % every === 0))
    .join('text')
    .attr('class', 'x')
    .attr('x', (b) => x(b.listener)! + x.bandwidth() / 2)
    .attr('y', height - m.bottom + 12)
    .attr('text-anchor', 'middle')
    .text((b) => String(b.listener));
  axis
    .append('text')
    .attr('x', (m.left + width - m.right) / 2)
    .attr('y', height - 4)
    .attr('text-anchor', 'middle')
    .text(t.listenerAxis);
  return svg.node()!;
}

/** The per-listener counts as a table (the chart's text equivalent). */
export function renderCountsTable(parent: Selection<HTMLElement, unknown, null, undefined>, s: Spread, t: TraceViewText): void {
  const det = parent.append('details').attr('class', 'rl-tv-counts');
  det.append('summary').text(t.countsTable);
  renderTextTable(det, {
    head: [t.listener, t.count, t.vsExpected],
    rows: s.bars.map((b) => [
      String(b.listener),
      String(b.count),
      s.expected ? `${b.count >= s.expected ? '+' : ''}${(((b.count - s.expected) / s.expected) * 100).toFixed(1)}%` : '–',
    ]),
  });
}

/** A page of event rows; `onExplain(index)` for the row buttons. */
export function renderRows(
  tbody: Selection<HTMLTableSectionElement, unknown, null, undefined>,
  rows: TraceRow[],
  t: TraceViewText,
  onExplain: (index: number) => void,
): void {
  tbody
    .selectAll<HTMLTableRowElement, TraceRow>('tr')
    .data(rows, (r) => String(r.index))
    .join('tr')
    .attr('class', (r) => (r.agrees === false ? 'rl-tv-miss' : null))
    .html('')
    .call((tr) => {
      tr.append('td').text((r) => r.seq);
      tr.append('td')
        .attr('class', 'rl-mono')
        .text((r) => r.tuple);
      tr.append('td').text((r) => (r.cpu === null ? '–' : r.cpu));
      tr.append('td').text((r) => r.kernel);
      tr.append('td').text((r) => (r.model === null ? t.needsKey : r.model < 0 ? t.noSocket : r.model));
      tr.append('td').text((r) => (r.agrees === null ? '–' : r.agrees ? t.yes : t.no));
      tr.append('td')
        .append('button')
        .attr('type', 'button')
        .attr('class', 'rl-dv-rowbtn')
        .attr('aria-label', (r) => t.explainRow(r.seq))
        .text(t.explain)
        .on('click', (_e, r) => onExplain(r.index));
    });
}

/** The chart is drawn at its box's width (so its labels keep their size on a phone), within 280–640 px. */
export function chartWidth(box: HTMLElement): number {
  return Math.max(280, Math.min(640, Math.round(box.clientWidth || 560)));
}

/** An agent command inside a sentence, such as `reuseport-agent verify --trace` (captured, for `split`). */
const AGENT_COMMAND = /(reuseport-agent [a-z]+(?: --[a-z-]+)*)/;

/** One line of a recording's facts: a sentence, or the command it was recorded with (cut, with what was left out said). */
export type TraceFact = { label: string; text: string } | { label: string; command: string; more: string | null };

/** The recording's facts as a definition list under `dl`. */
export function renderFacts(dl: Selection<HTMLDListElement, unknown, null, undefined>, facts: readonly TraceFact[]): void {
  for (const f of facts) {
    dl.append('dt').text(f.label);
    if ('command' in f) {
      // One box per argument, so a narrow column breaks the line between arguments, never inside "--listeners".
      const cmd = dl.append('dd').attr('class', 'rl-tv-command');
      for (const [i, word] of f.command.split(' ').entries()) {
        if (i) cmd.append('span').text(' ');
        cmd.append('span').attr('class', 'rl-tv-arg').text(word);
      }
      if (f.more !== null) cmd.append('span').attr('class', 'rl-hint').text(f.more);
      continue;
    }
    const dd = dl.append('dd');
    // A command named in the sentence ("reuseport-agent verify --trace") breaks only between its words, never
    // inside "--trace"; as a whole it was wider than a phone's column and pushed the report past the card.
    for (const [i, part] of f.text.split(AGENT_COMMAND).entries()) {
      if (i % 2 === 0) {
        if (part) dd.append('span').text(part);
        continue;
      }
      for (const [j, word] of part.split(' ').entries()) {
        if (j) dd.append('span').text(' ');
        dd.append('span').attr('class', 'rl-tv-nowrap').text(word);
      }
    }
  }
}

/** A `reuseport-agent bench` file (the fields shown). */
export interface BenchFile {
  nproc: number;
  workers: number;
  clients: number;
  connections_per_client: number;
  accept: string;
  fork_over_reuseport?: number;
  modes: { mode: string; seconds: number; connections_per_second: number; per_worker: number[]; max_min_ratio: number; jain: number }[];
}

/** The words of the benchmark view (ui.trace.bench_* of messages/*.json). */
export interface BenchText {
  benchTitle: string;
  benchSetup: (workers: number, clients: number, conns: number, accept: string, nproc: number) => string;
  benchCols: string[];
  benchPerWorker: string;
  benchWorkerAxis: string;
  /** The comparison with the fork-against-reuseport article, for a machine of `nproc` CPUs. */
  benchNote: (nproc: number) => string;
}

/** The benchmark view: per mode, time, rate and each worker's accepts, with a bar chart per mode. */
export function renderBench(body: Selection<HTMLDivElement, unknown, null, undefined>, b: BenchFile, t: TraceViewText & BenchText): void {
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
