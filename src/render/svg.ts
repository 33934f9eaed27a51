/** The opening of every chart the widgets draw: an SVG image of a fixed viewBox, with its label for screen readers. */
import { select, type Selection } from 'd3';

/** Appends an `<svg role="img">` of `width`×`height` user units, labelled `label`, to `parent`. */
export function chartSvg(
  parent: HTMLElement,
  className: string,
  width: number,
  height: number,
  label: string,
): Selection<SVGSVGElement, unknown, null, undefined> {
  return select(parent).append('svg').attr('class', className).attr('viewBox', `0 0 ${width} ${height}`).attr('role', 'img').attr('aria-label', label);
}
