/**
 * The workers' stall toggles over the scene: one button beside each
 * listener's row, at least 24 px square (WCAG 2.5.8), joined by listener so a
 * button under the keyboard focus is never rebuilt. When the rows are too
 * many or too close, none is drawn (the Settings panel then has the toggle).
 */
import type { Selection } from 'd3';
import { COL } from '../../scene/dispatch/layout';
import type { RowView } from '../../scene/dispatch/structure';
import { ROW_PARTS } from '../../scene/dispatch/tour';
import { px, py, type Box } from './particles';

/** Whether the scene has room for a stall button beside each of `rows` listeners in a stage `box` high. */
export function stallButtonsFit(rows: number, box: Box): boolean {
  return rows > 0 && rows <= 32 && box.height / rows >= 26;
}

/** Draws a stall toggle beside each row (none when they do not fit); `label` names a row's worker's toggle. */
export function drawStalls(
  parent: Selection<HTMLDivElement, unknown, null, undefined>,
  rows: readonly RowView[],
  box: Box,
  label: (row: string) => string,
): void {
  const fit = stallButtonsFit(rows.length, box);
  const rh = box.height / Math.max(1, rows.length);
  // At least 24 px square (WCAG 2.5.8), two pixels clear of the next row's.
  const size = Math.min(28, Math.max(24, rh - 4));
  const x = px(box, COL.listener) + ROW_PARTS.stall;
  parent
    .selectAll<HTMLButtonElement, RowView>('button')
    .data(fit ? rows : [], (d) => String(d.listener))
    .join((e) => {
      const b = e.append('button').attr('type', 'button').attr('class', 'rl-dv-stall');
      b.append('span').attr('class', 'rl-dv-stall-icon').attr('aria-hidden', 'true');
      return b;
    })
    .attr('data-listener', (d) => d.listener)
    .attr('aria-label', (d) => label(d.label))
    .attr('title', (d) => label(d.label))
    .attr('aria-pressed', (d) => String(d.stalled))
    .style('left', `${x}px`)
    .style('top', (d) => `${py(box, d.y) - size / 2}px`)
    .style('width', '28px')
    .style('height', `${size}px`);
}
