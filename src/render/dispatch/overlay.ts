/**
 * The scene's fixed parts as SVG with D3: column headings, the hash range
 * with its bands and axis, the socks[] column with its capacity, listener
 * boxes with accept-queue bars, and the focused packet's hash marker.
 */
import { axisLeft, scaleLinear, select, type Selection } from 'd3';
import type { Structure } from '../../scene/dispatch/structure';
import { COL } from '../../scene/dispatch/layout';
import { px, py, type Box } from './particles';

type G = Selection<SVGGElement, unknown, null, undefined>;

export interface Marker {
  /** Hash as a y position in [0, 1]. */
  y: number;
  text: string;
}

export class Overlay {
  readonly svg: Selection<SVGSVGElement, unknown, null, undefined>;
  #static: G;
  #rows: G;
  #marker: G;
  #lookup: G;
  readonly #words: { score: string; more: (n: number) => string };
  constructor(parent: HTMLElement, words: { score: string; more: (n: number) => string } = { score: 'score', more: (n) => `+${n} more` }) {
    this.#words = words;
    this.svg = select(parent).append('svg').attr('class', 'rl-dv-overlay').attr('aria-hidden', 'true');
    this.#static = this.svg.append('g');
    this.#rows = this.svg.append('g');
    this.#marker = this.svg.append('g');
    this.#lookup = this.svg.append('g').attr('class', 'rl-dv-lk');
  }

  /**
   * The inspected packet's listener lookup between the clients and the hash
   * range: each table the model walked, its candidates in list order with
   * their compute_score, the receiving one ticked (`null` clears it). The
   * text under the scene says the same for screen readers.
   */
  lookup(walks: readonly { caption: string; chips: readonly { label: string; score: number; chosen: boolean }[] }[] | null, b: Box, receiver: string | null = null): void {
    const g = this.#lookup;
    g.selectAll('*').remove();
    if (!walks) return;
    const x = px(b, COL.lookup);
    const bottom = py(b, 1);
    let y = py(b, 0) + 2;
    const MAX_ROWS = 8;
    for (const w of walks) {
      if (y > bottom - 30) break;
      // Table name, then its bucket key on a second line.
      const caption = w.caption.replace(' (port-keyed, 32 buckets),', '[32]');
      const cut = caption.indexOf(' (');
      const lines = cut > 0 ? [caption.slice(0, cut), caption.slice(cut + 1)] : [caption];
      for (const line of lines) {
        g.append('text').attr('class', 'rl-dv-lk-cap').attr('x', x).attr('y', y + 10).text(line);
        y += 12;
      }
      const shown = w.chips.slice(0, MAX_ROWS);
      for (const c of shown) {
        g.append('text')
          .attr('class', c.chosen ? 'rl-dv-lk-row rl-dv-lk-chosen' : 'rl-dv-lk-row')
          .attr('x', x + 6)
          .attr('y', y + 10)
          .text(`${c.label} · ${this.#words.score} ${c.score}${c.chosen ? ' ✓' : ''}`);
        y += 13;
      }
      if (w.chips.length > shown.length) {
        g.append('text').attr('class', 'rl-dv-lk-row').attr('x', x + 6).attr('y', y + 10).text(this.#words.more(w.chips.length - shown.length));
        y += 13;
      }
      y += 6;
    }
    if (receiver !== null && y < bottom - 12) g.append('text').attr('class', 'rl-dv-lk-row rl-dv-lk-chosen').attr('x', x).attr('y', y + 10).text(`→ ${receiver}`);
  }

  /** Redraws the fixed parts (after a group change or a resize). */
  draw(s: Structure, b: Box, w: number, h: number): void {
    this.svg.attr('width', w).attr('height', h).attr('viewBox', `0 0 ${w} ${h}`);
    const g = this.#static;
    g.selectAll('*').remove();
    const head = (x: number, t: string, anchor = 'start') => g.append('text').attr('class', 'rl-dv-head').attr('x', px(b, x)).attr('y', 14).attr('text-anchor', anchor).text(t);
    const heads = [head(0, s.headings.clients), head(COL.hash, s.headings.hash, 'middle'), head(COL.slot, s.headings.slots, 'middle'), head(COL.listener, s.headings.listeners)];
    spreadHeadings(heads.map((h) => h.node()!), w);
    g.append('g')
      .selectAll('text')
      .data(s.clientLabels)
      .join('text')
      .attr('class', 'rl-dv-client')
      .attr('x', px(b, COL.client) + 8)
      .attr('y', (d) => py(b, d.y))
      .attr('dy', '0.35em')
      .text((d) => d.label);
    const hx = px(b, COL.hash);
    const scale = scaleLinear().domain([0, 2 ** 32]).range([py(b, 0), py(b, 1)]);
    g.append('rect').attr('x', hx - 6).attr('y', py(b, 0)).attr('width', 12).attr('height', b.height).attr('class', 'rl-dv-range');
    if (s.bands > 0) {
      const bh = b.height / s.bands;
      g.append('g')
        .selectAll('rect')
        .data(Array.from({ length: s.bands }, (_, i) => i))
        .join('rect')
        .attr('x', hx - 6)
        .attr('y', (i) => py(b, 0) + i * bh)
        .attr('width', 12)
        .attr('height', bh)
        .attr('class', (i) => (i % 2 ? 'rl-dv-band rl-dv-band-odd' : 'rl-dv-band'));
    }
    g.append('g')
      .attr('transform', `translate(${hx - 8},0)`)
      .attr('class', 'rl-dv-axis')
      .call(axisLeft(scale).tickValues([0, 2 ** 30, 2 ** 31, 3 * 2 ** 30, 2 ** 32 - 1]).tickFormat((d) => `0x${Number(d).toString(16).padStart(8, '0')}`));
    if (s.selection === 'group' && s.maxSocks) {
      // Capacity gauge: used slots over max_socks.
      const gx = px(b, COL.slot) - 30;
      g.append('rect').attr('x', gx).attr('y', 31).attr('width', 60).attr('height', 6).attr('class', 'rl-dv-gauge');
      g.append('rect').attr('x', gx).attr('y', 31).attr('width', (60 * s.listening) / s.maxSocks).attr('height', 6).attr('class', 'rl-dv-gauge-used');
    }
    this.#rows.selectAll('*').remove();
    const rh = b.height / Math.max(1, s.rows.length);
    const fs = Math.max(7, Math.min(12, rh * 0.8));
    const every = Math.max(1, Math.ceil(9 / rh));
    const row = this.#rows
      .selectAll('g')
      .data(s.rows, (d) => String((d as { listener: number }).listener))
      .join('g')
      .attr('class', 'rl-dv-row')
      .attr('transform', (d) => `translate(0,${py(b, d.y)})`);
    if (s.selection === 'group')
      row
        .append('rect')
        .attr('x', px(b, COL.slot) - 14)
        .attr('y', -rh / 2 + 0.5)
        .attr('width', 28)
        .attr('height', Math.max(1, rh - 1))
        .attr('class', 'rl-dv-slot');
    row
      .filter((d) => d.index % every === 0)
      .append('text')
      .attr('x', px(b, COL.slot))
      .attr('dy', '0.35em')
      .attr('text-anchor', 'middle')
      .attr('font-size', fs)
      .attr('class', 'rl-dv-slot-label')
      .text((d) => (s.selection === 'group' ? `[${d.index}]` : `#${d.index}`));
    row
      .append('rect')
      .attr('x', px(b, COL.listener))
      .attr('y', -rh / 2 + 0.5)
      .attr('width', 16)
      .attr('height', Math.max(1, rh - 1))
      .attr('fill', (d) => (d.fill === 'solid' ? d.colour : '#fff'))
      .attr('stroke', (d) => d.colour)
      .attr('stroke-width', 2);
    row
      .filter((d) => d.index % every === 0)
      .append('text')
      .attr('x', px(b, COL.listener) + 20)
      .attr('dy', '0.35em')
      .attr('font-size', fs)
      .text((d) => `${d.label}${d.incomingCpu >= 0 ? ` cpu${d.incomingCpu}` : ''}`);
  }

  /** Row positions while a move animates (the last member moving into a hole). */
  update(s: Structure, b: Box): void {
    this.#rows
      .selectAll<SVGGElement, Structure['rows'][number]>('g.rl-dv-row')
      .data(s.rows, (d) => String(d.listener))
      .attr('transform', (d) => `translate(0,${py(b, d.y)})`);
  }

  /** The focused packet's hash on the range, with the model's numbers. */
  marker(m: Marker | null, b: Box): void {
    this.#marker.selectAll('*').remove();
    if (!m) return;
    const y = py(b, m.y);
    const x = px(b, COL.hash);
    this.#marker.append('line').attr('x1', x - 10).attr('x2', x + 10).attr('y1', y).attr('y2', y).attr('class', 'rl-dv-marker');
    this.#marker.append('text').attr('x', x + 12).attr('y', y - 4).attr('class', 'rl-dv-marker-text').text(m.text);
  }
}

/**
 * Keeps the column headings from overlapping on a narrow scene: a heading that
 * would run into the one before it drops to a second line, and the last one
 * ends at the right edge instead of running past it.
 */
function spreadHeadings(nodes: SVGTextElement[], width: number): void {
  const boxes = nodes.map((n) => (typeof n.getBBox === 'function' ? n.getBBox() : undefined));
  if (boxes.some((b) => !b || b.width === 0)) return; // not laid out (no DOM rendering): leave as drawn
  const last = nodes.length - 1;
  const lb = boxes[last]!;
  if (lb.x + lb.width > width - 2) {
    nodes[last]!.setAttribute('text-anchor', 'end');
    nodes[last]!.setAttribute('x', String(width - 2));
    boxes[last] = nodes[last]!.getBBox();
  }
  // Two heading lines; each heading takes the first line it fits on, shortened
  // to its first phrase when it fits on neither.
  const rights = [-Infinity, -Infinity];
  const ys = ['14', '28'];
  for (const [i, n] of nodes.entries()) {
    let b = boxes[i]!;
    let row = rights.findIndex((r) => b.x >= r + 6);
    if (row < 0) {
      const short = (n.textContent ?? '').split(/ · |, /)[0]!;
      n.textContent = short;
      b = n.getBBox();
      row = rights.findIndex((r) => b.x >= r + 6);
    }
    if (row < 0) row = 1;
    n.setAttribute('y', ys[row]!);
    rights[row] = b.x + b.width;
  }
}
