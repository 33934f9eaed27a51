/**
 * The scene's fixed parts as SVG with D3: column headings, the hash range
 * with its bands and axis, the socks[] column with its capacity, listener
 * boxes in slot order, the member that slides into a freed slot, and the
 * focused packet's hash marker.
 *
 * Labels never overlap: headings take one of two lines (shortened when they
 * fit on neither), and the optional labels (client addresses, the marker's
 * hash) are dropped where they would cover a label that matters more. Every
 * label also stays inside the scene. The full numbers of the focused packet
 * are in the line under the scene, so nothing is lost when a label goes.
 */
import { scaleLinear, select, type Selection } from 'd3';
import type { RowView, Structure } from '../../scene/dispatch/structure';
import { COL } from '../../scene/dispatch/layout';
import { px, py, type Box } from './particles';

type G = Selection<SVGGElement, unknown, null, undefined>;

export interface Marker {
  /** Hash as a y position in [0, 1]. */
  y: number;
  /** The short label drawn next to the marker (the hash in hex). */
  text: string;
}

/** A member moving from one row centre to another (y in [0, 1]), `u` of the way. */
export interface Slide {
  row: RowView;
  from: number;
  to: number;
  u: number;
}

/** Dark outline around every coloured mark, so light Okabe-Ito colours (yellow, sky blue) stand out on white. */
export const OUTLINE = '#1d1d1f';
/** Smallest text drawn in the scene, CSS pixels. */
export const MIN_FONT = 11;
/** Rows drawn as a group each; more are drawn as a few paths. */
const ROW_GROUPS = 64;

export class Overlay {
  readonly svg: Selection<SVGSVGElement, unknown, null, undefined>;
  #static: G;
  #rows: G;
  #slide: G;
  #marker: G;
  #w = 0;
  #h = 0;
  constructor(parent: HTMLElement) {
    this.svg = select(parent).append('svg').attr('class', 'rl-dv-overlay').attr('aria-hidden', 'true');
    this.#static = this.svg.append('g');
    this.#rows = this.svg.append('g');
    this.#slide = this.svg.append('g').attr('class', 'rl-dv-slide');
    this.#marker = this.svg.append('g');
  }

  /** Redraws the fixed parts (after a group change or a resize). */
  draw(s: Structure, b: Box, w: number, h: number): void {
    this.#w = w;
    this.#h = h;
    this.svg.attr('width', w).attr('height', h).attr('viewBox', `0 0 ${w} ${h}`);
    const g = this.#static;
    g.selectAll('*').remove();
    const head = (x: number, t: string, anchor = 'start') =>
      g.append('text').attr('class', 'rl-dv-head rl-dv-label').attr('x', x).attr('y', 14).attr('text-anchor', anchor).text(t);
    const heads = [
      head(2, s.headings.clients),
      head(px(b, COL.hash), s.headings.hash, 'middle'),
      head(px(b, COL.slot), s.headings.slots, 'middle'),
      head(px(b, COL.listener), s.headings.listeners),
    ];
    spreadHeadings(
      heads.map((h) => h.node()!),
      w,
    );
    const hx = px(b, COL.hash);
    g.append('rect')
      .attr('x', hx - 6)
      .attr('y', py(b, 0))
      .attr('width', 12)
      .attr('height', b.height)
      .attr('class', 'rl-dv-range');
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
    // The hash axis: 0 at the top, 2^32 at the bottom, in quarters (short labels: the scene is narrow on a phone).
    const scale = scaleLinear()
      .domain([0, 4])
      .range([py(b, 0), py(b, 1)]);
    const axis = g.append('g').attr('class', 'rl-dv-axis');
    axis
      .append('line')
      .attr('x1', hx - 8)
      .attr('x2', hx - 8)
      .attr('y1', py(b, 0))
      .attr('y2', py(b, 1))
      .attr('class', 'rl-dv-axis-line');
    ['0', '2³⁰', '2³¹', '3·2³⁰', '2³²'].forEach((label, i) => {
      const y = scale(i);
      axis
        .append('line')
        .attr('x1', hx - 12)
        .attr('x2', hx - 8)
        .attr('y1', y)
        .attr('y2', y)
        .attr('class', 'rl-dv-axis-line');
      axis
        .append('text')
        .attr('class', 'rl-dv-label rl-dv-axis-label')
        .attr('x', hx - 14)
        .attr('y', y)
        .attr('dy', i === 0 ? '0.8em' : i === 4 ? '-0.1em' : '0.35em')
        .attr('text-anchor', 'end')
        .text(label);
    });
    if (s.selection === 'group' && s.maxSocks) {
      // Capacity gauge: used slots over max_socks.
      const gx = px(b, COL.slot) - 30;
      g.append('rect')
        .attr('x', gx)
        .attr('y', b.top - 8)
        .attr('width', 60)
        .attr('height', 5)
        .attr('class', 'rl-dv-gauge');
      g.append('rect')
        .attr('x', gx)
        .attr('y', b.top - 8)
        .attr('width', (60 * s.listening) / s.maxSocks)
        .attr('height', 5)
        .attr('class', 'rl-dv-gauge-used');
    }
    this.#drawRows(s, b);
    g.append('g')
      .selectAll('text')
      .data(s.clientLabels)
      .join('text')
      .attr('class', 'rl-dv-client rl-dv-label rl-dv-optional')
      .attr('x', px(b, COL.client) + 8)
      .attr('y', (d) => py(b, d.y))
      .attr('dy', '0.35em')
      .text((d) => d.label);
    this.declutter();
  }

  /**
   * Slot and listener boxes, each row at its slot (chain position in the
   * reservoir era). Up to {@link ROW_GROUPS} rows each get a group of their
   * own; beyond that the boxes are one path per colour and fill (a thousand
   * groups cost a close hundreds of milliseconds of DOM work), and only the
   * labelled rows get a group.
   */
  #drawRows(s: Structure, b: Box): void {
    this.#rows.selectAll('*').remove();
    const rh = b.height / Math.max(1, s.rows.length);
    // Label every k-th row so that labels of MIN_FONT pixels never touch.
    const every = Math.max(1, Math.ceil((MIN_FONT + 3) / rh));
    const dense = s.rows.length > ROW_GROUPS;
    if (dense) {
      const sx = px(b, COL.slot) - 14;
      const lx = px(b, COL.listener);
      const top = (d: RowView) => py(b, d.y) - rh / 2;
      if (s.selection === 'group')
        this.#rows
          .append('path')
          .attr('class', 'rl-dv-slot')
          .attr('d', s.rows.map((d) => `M${sx},${top(d)}h28v${rh}h-28z`).join(''));
      const groups = new Map<string, RowView[]>();
      for (const d of s.rows) {
        const k = `${d.colour}|${d.fill}`;
        groups.set(k, [...(groups.get(k) ?? []), d]);
      }
      for (const [k, rows] of groups) {
        const [colour, fill] = k.split('|');
        this.#rows
          .append('path')
          .attr('class', 'rl-dv-listener')
          .attr('fill', fill === 'solid' ? colour! : '#fff')
          .attr('stroke', fill === 'solid' ? OUTLINE : colour!)
          .attr('stroke-width', 0.5)
          .attr('d', rows.map((d) => `M${lx},${top(d)}h16v${rh}h-16z`).join(''));
      }
    }
    const row = this.#rows
      .selectAll('g')
      .data(dense ? s.rows.filter((d) => d.index % every === 0) : s.rows, (d) => String((d as RowView).listener))
      .join('g')
      .attr('class', (d) => (d.stalled ? 'rl-dv-row rl-dv-stalled' : 'rl-dv-row'))
      .attr('data-slot', (d) => d.index)
      .attr('data-listener', (d) => d.listener)
      .attr('transform', (d) => `translate(0,${py(b, d.y)})`);
    if (s.selection === 'group' && !dense)
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
      .attr('class', 'rl-dv-slot-label rl-dv-label')
      .text((d) => (s.selection === 'group' ? `[${d.index}]` : `#${d.index}`));
    if (!dense) listenerBox(row, b, rh);
    row
      .filter((d) => d.index % every === 0)
      .append('text')
      .attr('x', px(b, COL.listener) + 20)
      .attr('dy', '0.35em')
      .attr('class', 'rl-dv-listener-label rl-dv-label')
      .text((d) => `${d.label}${d.incomingCpu >= 0 ? ` cpu${d.incomingCpu}` : ''}${d.tag ? ` ${d.tag}` : ''}`);
  }

  /**
   * The member that moved into a freed slot, drawn sliding from its old row to
   * its new one (the kernel's reuseport_detach_sock moves the last socket into
   * the hole); `null` ends the slide. Its new row is outlined meanwhile.
   */
  slide(m: Slide | null, b: Box, rows: number): void {
    const g = this.#slide;
    if (!m) {
      // Called every frame: touch the DOM only when a slide has just ended.
      if (!g.node()!.childNodes.length) return;
      g.selectAll('*').remove();
      this.#rows.selectAll('.rl-dv-arriving').classed('rl-dv-arriving', false);
      return;
    }
    const rh = b.height / Math.max(1, rows);
    const y = py(b, m.from + (m.to - m.from) * easeInOut(m.u));
    let ghost = g.select<SVGGElement>('g');
    if (ghost.empty()) {
      const fresh = g.append('g').datum(m.row);
      listenerBox(fresh, b, rh);
      ghost = fresh as unknown as typeof ghost;
      ghost.append('path').attr('class', 'rl-dv-slide-path');
      this.#rows.selectAll<SVGGElement, RowView>('.rl-dv-row').classed('rl-dv-arriving', (d) => d.listener === m.row.listener);
    }
    ghost.attr('transform', `translate(0,${y})`);
    const x = px(b, COL.listener) - 4;
    ghost.select('path').attr('d', `M${x},${py(b, m.from) - y} L${x},${py(b, m.to) - y}`);
  }

  /** The focused packet's hash on the range: a line, and the hash beside it when there is room. */
  marker(m: Marker | null, b: Box): void {
    this.#marker.selectAll('*').remove();
    if (!m) return;
    const y = py(b, m.y);
    const x = px(b, COL.hash);
    this.#marker
      .append('line')
      .attr('x1', x - 10)
      .attr('x2', x + 10)
      .attr('y1', y)
      .attr('y2', y)
      .attr('class', 'rl-dv-marker');
    this.#marker
      .append('text')
      .attr('x', x + 10)
      .attr('y', y - 4)
      .attr('class', 'rl-dv-marker-text rl-dv-label rl-dv-optional')
      .text(m.text);
    this.declutter();
  }

  /**
   * Hides every optional label that would overlap a label drawn before it or
   * leave the scene (client addresses, the marker's hash); keeps the others.
   */
  declutter(): void {
    const nodes = [...this.svg.node()!.querySelectorAll<SVGTextElement>('text.rl-dv-label')];
    if (!nodes.length || typeof nodes[0]!.getBBox !== 'function') return;
    // Required labels first, optional ones after, each in drawing order.
    const order = [...nodes.filter((n) => !n.classList.contains('rl-dv-optional')), ...nodes.filter((n) => n.classList.contains('rl-dv-optional'))];
    // Reads first, then writes: a write between two reads forces a layout per label.
    for (const n of order) n.style.display = '';
    const root = this.svg.node()!.getBoundingClientRect();
    const rects = order.map((n) => n.getBoundingClientRect());
    const placed: DOMRect[] = [];
    const hide: SVGTextElement[] = [];
    order.forEach((n, i) => {
      const r = rects[i]!;
      if (r.width === 0) return;
      if (n.classList.contains('rl-dv-optional')) {
        const outside = r.left < root.left || r.top < root.top || r.right > root.left + this.#w || r.bottom > root.top + this.#h;
        if (outside || placed.some((p) => overlaps(p, r))) {
          hide.push(n);
          return;
        }
      }
      placed.push(r);
    });
    for (const n of hide) n.style.display = 'none';
  }
}

const overlaps = (a: DOMRect, b: DOMRect) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
const easeInOut = (u: number) => (u < 0.5 ? 2 * u * u : 1 - (-2 * u + 2) ** 2 / 2);

/** A listener's box: its colour (hollow on odd cycles of 8) inside a dark outline. */
// biome-ignore lint/suspicious/noExplicitAny: d3's Selection is generic in element and data; this helper serves any
function listenerBox(row: Selection<any, RowView, any, any>, b: Box, rh: number): void {
  row
    .append('rect')
    .attr('x', px(b, COL.listener))
    .attr('y', -rh / 2 + 0.5)
    .attr('width', 16)
    .attr('height', Math.max(1, rh - 1))
    .attr('fill', (d) => (d.fill === 'solid' ? d.colour : '#fff'))
    .attr('stroke', OUTLINE)
    .attr('stroke-width', rh >= 4 ? 1 : 0.5)
    .attr('class', 'rl-dv-listener');
  row
    .filter((d) => d.fill === 'hollow' && rh >= 5)
    .append('rect')
    .attr('x', px(b, COL.listener) + 2)
    .attr('y', -rh / 2 + 2.5)
    .attr('width', 12)
    .attr('height', Math.max(1, rh - 5))
    .attr('fill', 'none')
    .attr('stroke', (d) => d.colour)
    .attr('stroke-width', 2);
}

/**
 * Keeps the column headings from overlapping on a narrow scene: a heading that
 * would run into the one before it drops to a second line, the last one ends
 * at the right edge instead of running past it, and a heading that fits on
 * neither line is shortened to its first phrase, then to its first word.
 */
function spreadHeadings(nodes: SVGTextElement[], width: number): void {
  if (typeof nodes[0]?.getBBox !== 'function' || nodes[0].getBBox().width === 0) return; // not laid out: leave as drawn
  const fitInside = (n: SVGTextElement) => {
    const b = n.getBBox();
    if (b.x + b.width > width - 2) {
      n.setAttribute('text-anchor', 'end');
      n.setAttribute('x', String(width - 2));
    } else if (b.x < 2) {
      n.setAttribute('text-anchor', 'start');
      n.setAttribute('x', '2');
    }
    return n.getBBox();
  };
  const rights = [-Infinity, -Infinity];
  const ys = ['14', '28'];
  for (const n of nodes) {
    const full = n.textContent ?? '';
    const tries = [full, full.split(/ · |, |，| \(|（/)[0]!, full.split(/[ ,，（(]/)[0]!];
    let placed = false;
    for (const text of tries) {
      n.textContent = text;
      const b = fitInside(n);
      const row = rights.findIndex((r) => b.x >= r + 8);
      if (row >= 0) {
        n.setAttribute('y', ys[row]!);
        rights[row] = b.x + b.width;
        placed = true;
        break;
      }
    }
    if (!placed) n.remove();
  }
}
