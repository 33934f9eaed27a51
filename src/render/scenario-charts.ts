/**
 * The scenario cards' charts (SVG, D3): accepts per worker, simulated bars
 * with measured ones beside them (hatched, so the two differ without
 * colour), and small line charts over time. The island gives each a table
 * as its text equivalent.
 */
import { line, max, scaleBand, scaleLinear, type Selection } from 'd3';
import { chartSvg } from './svg';
import type { WorkerBar } from '../scene/scenario-view';

const SIM = '#0072b2';
const MEASURED = '#d55e00';

/** The chart's zero line, from `x1` to `x2` at height `y`. */
function baseline(svg: Selection<SVGSVGElement, unknown, null, undefined>, x1: number, x2: number, y: number): void {
  svg.append('line').attr('x1', x1).attr('x2', x2).attr('y1', y).attr('y2', y).attr('stroke', '#222');
}

export interface BarsText {
  label: string;
  worker: (n: number) => string;
}

/**
 * `width` is in user units, the label font 12 of them: the chart scales to its card, so a width near the card's own
 * (a phone's card is about 300 px) keeps the labels near 12 px. At 360 they came out 5 to 9 px tall on a phone.
 */
export function renderWorkerBars(parent: HTMLElement, bars: WorkerBar[], t: BarsText, width = 280): SVGSVGElement {
  const height = 150;
  const m = { top: 8, right: 6, bottom: 26, left: 46 };
  const svg = chartSvg(parent, 'rl-sc-chart', width, height, t.label);
  const defs = svg.append('defs');
  const id = `rl-hatch-${Math.random().toString(36).slice(2, 8)}`;
  defs
    .append('pattern')
    .attr('id', id)
    .attr('width', 4)
    .attr('height', 4)
    .attr('patternUnits', 'userSpaceOnUse')
    .attr('patternTransform', 'rotate(45)')
    .append('rect')
    .attr('width', 2)
    .attr('height', 4)
    .attr('fill', MEASURED);
  const measured = bars.some((b) => b.measured !== undefined);
  const x = scaleBand<number>()
    .domain(bars.map((b) => b.worker))
    .range([m.left, width - m.right])
    .padding(bars.length > 24 ? 0.05 : 0.2);
  const top = max(bars, (b) => Math.max(b.sim, b.measured ?? 0)) || 1;
  const y = scaleLinear()
    .domain([0, top])
    .range([height - m.bottom, m.top])
    .nice();
  const w = measured ? x.bandwidth() / 2 : x.bandwidth();
  const g = svg.append('g');
  g.selectAll('rect.s')
    .data(bars)
    .join('rect')
    .attr('class', 's')
    .attr('x', (b) => x(b.worker)!)
    .attr('width', Math.max(0.5, w))
    .attr('y', (b) => y(b.sim))
    .attr('height', (b) => y(0) - y(b.sim))
    .attr('fill', SIM);
  if (measured) {
    g.selectAll('rect.m')
      .data(bars.filter((b) => b.measured !== undefined))
      .join('rect')
      .attr('class', 'm')
      .attr('x', (b) => x(b.worker)! + w)
      .attr('width', Math.max(0.5, w))
      .attr('y', (b) => y(b.measured!))
      .attr('height', (b) => y(0) - y(b.measured!))
      .attr('fill', `url(#${id})`)
      .attr('stroke', MEASURED);
  }
  const axis = svg.append('g').attr('font-size', 12).attr('fill', '#222');
  axis
    .selectAll('text.y')
    .data(y.ticks(3).filter((d) => Number.isInteger(d)))
    .join('text')
    .attr('x', m.left - 4)
    .attr('y', (d) => y(d) + 4)
    .attr('text-anchor', 'end')
    .text((d) => d.toLocaleString());
  const every = Math.max(1, Math.ceil(bars.length / Math.floor((width - m.left - m.right) / 30)));
  axis
    .selectAll('text.x')
    .data(bars.filter((b) => b.worker % every === 0))
    .join('text')
    .attr('x', (b) => x(b.worker)! + x.bandwidth() / 2)
    .attr('y', height - m.bottom + 15)
    .attr('text-anchor', 'middle')
    .text((b) => t.worker(b.worker));
  baseline(svg, m.left, width - m.right, y(0));
  return svg.node()!;
}

export interface LinesInput {
  /** One array per line, one value per slice (NaN: a gap). */
  series: number[][];
  /** Slice width, in the x unit. */
  step: number;
  label: string;
}

/** Small line chart; the line with the largest peak is drawn in the accent colour, the rest in grey. */
export function renderLines(parent: HTMLElement, l: LinesInput, width = 280): SVGSVGElement {
  const height = 120;
  const m = { top: 8, right: 8, bottom: 26, left: 46 };
  const svg = chartSvg(parent, 'rl-sc-chart', width, height, l.label);
  const n = l.series.reduce((a, s) => Math.max(a, s.length), 0);
  const x = scaleLinear()
    .domain([0, Math.max(1, n) * l.step])
    .range([m.left, width - m.right]);
  const peak = (s: number[]) => s.reduce((a, v) => (Number.isFinite(v) ? Math.max(a, v) : a), 0);
  const top = l.series.reduce((a, s) => Math.max(a, peak(s)), 0) || 1;
  const y = scaleLinear()
    .domain([0, top])
    .range([height - m.bottom, m.top])
    .nice();
  let hot = 0;
  l.series.forEach((s, i) => {
    if (peak(s) > peak(l.series[hot]!)) hot = i;
  });
  const path = line<number>()
    .defined((v) => Number.isFinite(v))
    .x((_v, i) => x((i + 0.5) * l.step))
    .y((v) => y(v));
  const order = l.series.map((_s, i) => i).filter((i) => i !== hot);
  if (l.series.length) order.push(hot);
  svg
    .append('g')
    .selectAll('path')
    .data(order)
    .join('path')
    .attr('d', (i) => path(l.series[i]!))
    .attr('fill', 'none')
    .attr('stroke', (i) => (i === hot ? SIM : '#8a8a8a'))
    .attr('stroke-width', (i) => (i === hot ? 2 : 1));
  const axis = svg.append('g').attr('font-size', 12).attr('fill', '#222');
  axis
    .selectAll('text.y')
    .data(y.ticks(3))
    .join('text')
    .attr('x', m.left - 4)
    .attr('y', (d) => y(d) + 4)
    .attr('text-anchor', 'end')
    .text((d) => d.toLocaleString());
  // Three ticks at most, so labels never run together on a phone; the caption gives the unit.
  axis
    .selectAll('text.x')
    .data(x.ticks(3))
    .join('text')
    .attr('x', (d) => x(d))
    .attr('y', height - m.bottom + 15)
    .attr('text-anchor', 'middle')
    .text((d) => d.toLocaleString());
  baseline(svg, m.left, width - m.right, y(0));
  return svg.node()!;
}
