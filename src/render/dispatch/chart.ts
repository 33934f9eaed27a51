/**
 * Live chart: connections per listener against the uniform-hash
 * expectation, with max/min and Jain's index. D3 scales and axes on SVG.
 */
import { axisBottom, axisLeft, max, scaleBand, scaleLinear, select, type Selection } from 'd3';
import type { Fairness } from '../../scene/dispatch/stats';

export interface Bar {
  label: string;
  count: number;
  colour: string;
  hollow: boolean;
}

/** Bars drawn as a rect each; more are drawn as one path per colour. */
const DENSE = 128;

export class Chart {
  readonly svg: Selection<SVGSVGElement, unknown, null, undefined>;
  constructor(
    parent: HTMLElement,
    readonly width = 360,
    readonly height = 200,
  ) {
    // Scales to its column (never wider than the screen), drawn in a fixed coordinate system.
    this.svg = select(parent)
      .append('svg')
      .attr('class', 'rl-dv-chart')
      .attr('viewBox', `0 0 ${width} ${height}`)
      .attr('preserveAspectRatio', 'xMinYMin meet')
      .attr('role', 'img');
  }

  #bars?: Selection<SVGGElement, unknown, null, undefined>;
  #expect?: Selection<SVGLineElement, unknown, null, undefined>;
  #x?: Selection<SVGGElement, unknown, null, undefined>;
  #y?: Selection<SVGGElement, unknown, null, undefined>;
  #labels = '';

  /** Updates in place (bars joined by label); axes are redrawn only when the listeners or the scale change. */
  /**
   * `label` says the chart's aria-label in the page's words (the catalogue's `ui.dispatch.chart_label`), `none` is the
   * page's word for a ratio that has no value yet (no listener has a connection).
   */
  draw(bars: Bar[], f: Fairness, label: (f: Fairness, ratio: string) => string, none: string): void {
    const m = { l: 40, r: 14, t: 8, b: 24 };
    const svg = this.svg;
    if (!this.#bars) {
      this.#bars = svg.append('g');
      this.#expect = svg.append('line').attr('class', 'rl-dv-expect');
      this.#x = svg
        .append('g')
        .attr('class', 'rl-dv-xaxis')
        .attr('transform', `translate(0,${this.height - m.b})`);
      this.#y = svg.append('g').attr('transform', `translate(${m.l},0)`);
    }
    svg.attr('aria-label', label(f, fmtRatio(f.maxMinRatio, none)));
    const x = scaleBand<string>()
      .domain(bars.map((b) => b.label))
      .range([m.l, this.width - m.r])
      .padding(0.1);
    const y = scaleLinear()
      .domain([0, Math.max(1, max(bars, (b) => b.count) ?? 1, f.expected)])
      .nice()
      .range([this.height - m.b, m.t]);
    if (bars.length <= DENSE) {
      this.#bars.selectAll('path').remove();
      this.#bars
        .selectAll<SVGRectElement, Bar>('rect')
        .data(bars, (d) => d.label)
        .join('rect')
        .attr('x', (d) => x(d.label)!)
        .attr('y', (d) => y(d.count))
        .attr('width', x.bandwidth())
        .attr('height', (d) => y(0) - y(d.count))
        .attr('fill', (d) => (d.hollow ? '#fff' : d.colour))
        .attr('stroke', (d) => (d.hollow ? d.colour : '#1d1d1f'))
        .attr('stroke-width', (d) => (d.hollow ? 2 : 0.75));
    } else {
      // Hundreds of bars, each under a pixel wide: one path per colour and fill (a rect each cost a close 25 ms at 1024).
      this.#bars.selectAll('rect').remove();
      const paths = new Map<string, string[]>();
      for (const b of bars) {
        const k = `${b.colour}|${b.hollow}`;
        const d = `M${x(b.label)!},${y(0)}V${y(b.count)}h${Math.max(0.5, x.bandwidth())}V${y(0)}z`;
        (paths.get(k) ?? paths.set(k, []).get(k)!).push(d);
      }
      this.#bars
        .selectAll<SVGPathElement, [string, string[]]>('path')
        .data([...paths], (d) => d[0])
        .join('path')
        .attr('fill', (d) => d[0].split('|')[0]!)
        .attr('d', (d) => d[1].join(''));
    }
    this.#expect!.attr('x1', m.l)
      .attr('x2', this.width - m.r)
      .attr('y1', y(f.expected))
      .attr('y2', y(f.expected));
    const labels = bars.map((b) => b.label).join(',');
    if (labels !== this.#labels) {
      this.#labels = labels;
      // Ticks in socks[] order, as many as fit at 11 px without touching (about 7 px a character, 10 px apart).
      const widest = Math.max(1, ...bars.map((b) => b.label.length)) * 7 + 10;
      const every = Math.max(1, Math.ceil(bars.length / Math.max(1, Math.floor((this.width - m.l - m.r) / widest))));
      this.#x!.call(axisBottom(x).tickValues(bars.filter((_, i) => i % every === 0).map((b) => b.label)));
    }
    const top = String(y.domain()[1]);
    if (this.#y!.attr('data-top') !== top) this.#y!.attr('data-top', top).call(axisLeft(y).ticks(4));
  }
}

/** Max/min as shown: two places, ∞, or `none` (the page's word) while there is no ratio. */
export function fmtRatio(r: number | null, none: string): string {
  return r === null ? none : r === Infinity ? '∞' : r.toFixed(2);
}
