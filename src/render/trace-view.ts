/**
 * Draws a trace summary: per-listener bars against the uniform expectation
 * (SVG, with a table as its text equivalent), and a page of event rows.
 */
import { scaleBand, scaleLinear, type Selection } from 'd3';
import { chartSvg } from './svg';
import type { Spread, TraceRow } from '../scene/trace-view';
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
