/**
 * The guided tour of the dispatch scene: its steps, and which part of the
 * scene each one highlights, as a rectangle in the scene's pixels. Pure: the
 * widget draws the rectangle and the words (dispatch-text.ts).
 */
import { COL } from './layout';

/** The tour's steps, in order: one part of the scene each. */
export const TOUR_STEP_IDS = ['hash', 'slot', 'socks', 'listener', 'queue', 'stalled'] as const;
export type TourStep = (typeof TOUR_STEP_IDS)[number];

/** The scene's pixel box inside the canvas (CSS pixels), as the renderer's. */
export interface SceneBox {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** A highlighted rectangle, CSS pixels from the canvas's top-left corner. */
export interface Spot {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** Where the parts of a listener's row sit, in pixels from the listener box's left edge. */
export const ROW_PARTS = {
  /** The stall button's left edge (it sits left of the box, over the end of the slot-to-listener path). */
  stall: -32,
  /** The accept queue bar's start. */
  queue: 72,
} as const;

/** What a step needs to know about the scene. */
export interface SpotInput {
  box: SceneBox;
  /** Canvas width, CSS pixels. */
  width: number;
  /** Listening rows, and the row (slot order) the step is about (-1 for none). */
  rows: number;
  row: number;
  /** The row whose worker is stalled, for the last step (-1: the step's row). */
  stalledRow: number;
  /** The scene draws a stall button beside each listener. */
  stallButtons: boolean;
  /** The reservoir era (no bands, no socks[]): the slot step shows the whole hash range. */
  reservoir?: boolean;
}

/** Longest accept-queue bar, CSS pixels, in a scene `width` wide whose listener column starts at `x`. */
export function queueBarMax(width: number, x: number): number {
  return Math.max(8, Math.min(width * 0.2, width - (x + ROW_PARTS.queue) - 4));
}

/** The rectangle step `step` highlights: never smaller than 18 px high, and inside the canvas. */
export function tourSpot(step: TourStep, s: SpotInput): Spot {
  const b = s.box;
  const X = (u: number) => b.left + u * b.width;
  const top = b.top;
  const bottom = b.top + b.height;
  const strip = (row: number): [number, number] => {
    if (row < 0 || s.rows <= 0) return [top, bottom];
    const rh = b.height / s.rows;
    const c = top + (row + 0.5) * rh;
    const h = Math.max(18, rh);
    return [c - h / 2, c + h / 2];
  };
  const lx = X(COL.listener);
  let x0: number;
  let x1: number;
  let y: [number, number];
  switch (step) {
    case 'hash':
      // The axis labels on the left, the marker's hash on the right, short of socks[] on a narrow scene.
      x0 = X(COL.hash) - 56;
      x1 = Math.min(X(COL.hash) + 84, X(COL.slot) - 20);
      y = [top - 4, bottom + 4];
      break;
    case 'slot':
      x0 = X(COL.hash) - 10;
      x1 = X(COL.slot) + 16;
      y = s.reservoir ? [top - 4, bottom + 4] : strip(s.row);
      break;
    case 'socks':
      x0 = X(COL.slot) - 32;
      x1 = X(COL.slot) + 32;
      y = [top - 12, bottom + 4];
      break;
    case 'listener':
      x0 = lx + (s.stallButtons ? ROW_PARTS.stall : 0) - 4;
      x1 = lx + ROW_PARTS.queue - 2;
      y = strip(s.row);
      break;
    case 'queue':
      x0 = lx + ROW_PARTS.queue - 4;
      x1 = lx + ROW_PARTS.queue + queueBarMax(s.width, lx) + 4;
      y = strip(s.row);
      break;
    case 'stalled': {
      const r = s.stalledRow >= 0 ? s.stalledRow : s.row;
      x0 = lx + (s.stallButtons ? ROW_PARTS.stall : 0) - 4;
      x1 = lx + ROW_PARTS.queue + queueBarMax(s.width, lx) + 4;
      y = strip(r);
      break;
    }
  }
  const left = Math.max(1, x0);
  const right = Math.min(s.width - 1, x1);
  const y0 = Math.max(1, y[0]);
  return { x: left, y: y0, w: Math.max(8, right - left), h: Math.max(18, y[1] - y0) };
}
