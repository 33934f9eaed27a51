/**
 * Per-listener counts of the pasted connections, drawn against the range
 * the secret-free simulation expects for any one listener (a shaded band
 * from its 5th to its 95th percentile, the mean dashed). A bar outside the
 * band is outlined, so the eye finds it without colour. SVG; the page gives
 * the table beside it as the text equivalent.
 */
import { scaleBand, scaleLinear } from 'd3';
import { chartSvg } from './svg';

export interface BarsInput {
  counts: number[];
  /** The expectation for one listener: p5, mean, p95 (absent before the simulation ran). */
  band?: { p5: number; mean: number; p95: number };
  label: string;
  axis: string;
  /** Each bar's label under it. @default its index */
  labels?: readonly string[];
}

export function renderPasteBars(parent: HTMLElement, b: BarsInput, width = 640): SVGSVGElement {
  const height = 180;
  const m = { top: 10, right: 8, bottom: 32, left: 52 };
  const svg = chartSvg(parent, 'rl-pb', width, height, b.label);
  const n = b.counts.length;
  const x = scaleBand<number>()
    .domain(Array.from({ length: n }, (_, i) => i))
    .range([m.left, width - m.right])
    .padding(n > 64 ? 0 : 0.15);
  const top = Math.max(b.band?.p95 ?? 0, ...b.counts) * 1.1 || 1;
  const y = scaleLinear()
    .domain([0, top])
    .range([height - m.bottom, m.top])
    .nice();
  if (b.band) {
    svg
      .append('rect')
      .attr('class', 'rl-pb-band')
      .attr('x', m.left)
      .attr('width', width - m.left - m.right)
      .attr('y', y(b.band.p95))
      .attr('height', Math.max(1, y(b.band.p5) - y(b.band.p95)))
      .attr('fill', '#9ecae1')
      .attr('fill-opacity', 0.55);
  }
  const outside = (c: number) => b.band !== undefined && (c < b.band.p5 || c > b.band.p95);
  svg
    .append('g')
    .selectAll('rect')
    .data(b.counts)
    .join('rect')
    .attr('x', (_c, i) => x(i)!)
    .attr('width', Math.max(0.5, x.bandwidth()))
    .attr('y', (c) => y(c))
    .attr('height', (c) => y(0) - y(c))
    .attr('fill', '#0072b2')
    .attr('stroke', (c) => (outside(c) ? '#000' : 'none'))
    .attr('stroke-width', 1.5);
  if (b.band) {
    svg
      .append('line')
      .attr('x1', m.left)
      .attr('x2', width - m.right)
      .attr('y1', y(b.band.mean))
      .attr('y2', y(b.band.mean))
      .attr('stroke', '#000')
      .attr('stroke-dasharray', '4 3');
  }
  const axis = svg.append('g').attr('font-size', 12).attr('fill', '#222');
  axis
    .selectAll('text.y')
    .data(y.ticks(4).filter((d) => Number.isInteger(d)))
    .join('text')
    .attr('class', 'y')
    .attr('x', m.left - 4)
    .attr('y', (d) => y(d) + 4)
    .attr('text-anchor', 'end')
    .text((d) => d.toLocaleString());
  // Bar labels, at most one per 28 px (more for long labels) so they never overlap.
  const room = Math.max(28, 8 * Math.max(0, ...(b.labels ?? []).map((l) => l.length)));
  const every = Math.max(1, Math.ceil(n / Math.floor((width - m.left - m.right) / room)));
  axis
    .selectAll('text.x')
    .data(Array.from({ length: n }, (_, i) => i).filter((i) => i % every === 0))
    .join('text')
    .attr('class', 'x')
    .attr('x', (i) => x(i)! + x.bandwidth() / 2)
    .attr('y', height - m.bottom + 14)
    .attr('text-anchor', 'middle')
    .text((i) => b.labels?.[i] ?? String(i));
  axis
    .append('text')
    .attr('x', (m.left + width - m.right) / 2)
    .attr('y', height - 4)
    .attr('text-anchor', 'middle')
    .text(b.axis);
  return svg.node()!;
}
