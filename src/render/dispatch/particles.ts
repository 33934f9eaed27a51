/**
 * Draws the clients and the packets in flight on a canvas: one path per
 * colour and fill, so thousands of packets cost a few dozen draw calls.
 * Kinds are told apart by shape (SYN square, SYN-ACK diamond, ACK bar,
 * RST cross, UDP triangle); listeners by Okabe-Ito colour, hollow marks on
 * every second cycle of 8.
 */
import { OKABE_ITO, NO_LISTENER_COLOUR } from '../../scene/dispatch/palette';
import type { Frame } from '../../scene/dispatch/sim';

/** Pixel box of the scene inside the canvas (CSS pixels). */
export interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

export const px = (b: Box, x: number) => b.left + x * b.width;
export const py = (b: Box, y: number) => b.top + y * b.height;

const COLOURS = [...OKABE_ITO, NO_LISTENER_COLOUR];

function shape(ctx: CanvasRenderingContext2D, kind: number, x: number, y: number, r: number): void {
  switch (kind) {
    case 0: // SYN (straight edges: see KIND_SHAPE)
      ctx.rect(x - r, y - r, 2 * r, 2 * r);
      break;
    case 1: // SYN-ACK
      ctx.moveTo(x, y - r * 1.3);
      ctx.lineTo(x + r * 1.3, y);
      ctx.lineTo(x, y + r * 1.3);
      ctx.lineTo(x - r * 1.3, y);
      ctx.closePath();
      break;
    case 2: // ACK
      ctx.rect(x - r * 1.4, y - r * 0.5, 2.8 * r, r);
      break;
    case 3: // RST
      ctx.moveTo(x - r, y - r);
      ctx.lineTo(x + r, y + r);
      ctx.moveTo(x + r, y - r);
      ctx.lineTo(x - r, y + r);
      break;
    default: // UDP
      ctx.moveTo(x, y - r * 1.2);
      ctx.lineTo(x + r * 1.1, y + r * 0.8);
      ctx.lineTo(x - r * 1.1, y + r * 0.8);
      ctx.closePath();
  }
}

/** Draws the packets of `f`; `highlight` is a seq drawn larger with a ring. */
export function drawPackets(ctx: CanvasRenderingContext2D, f: Frame, b: Box, r: number, highlight: number | null): void {
  ctx.lineWidth = 1.5;
  for (let c = 0; c <= OKABE_ITO.length; c++) {
    for (const hollow of [false, true]) {
      ctx.beginPath();
      let any = false;
      for (let i = 0; i < f.n; i++) {
        const l = f.listener[i]!;
        const ci = l < 0 ? OKABE_ITO.length : l % OKABE_ITO.length;
        if (ci !== c) continue;
        const isHollow = l >= 0 && Math.floor(l / OKABE_ITO.length) % 2 === 1;
        const k = f.kind[i]!;
        if ((isHollow || k === 3) !== hollow) continue;
        shape(ctx, k, px(b, f.x[i]!), py(b, f.y[i]!), r);
        any = true;
      }
      if (!any) continue;
      if (hollow) {
        ctx.strokeStyle = COLOURS[c]!;
        ctx.stroke();
      } else {
        ctx.fillStyle = COLOURS[c]!;
        ctx.fill();
      }
    }
  }
  if (highlight !== null) {
    for (let i = 0; i < f.n; i++) {
      if (f.seq[i] !== highlight) continue;
      ctx.beginPath();
      ctx.arc(px(b, f.x[i]!), py(b, f.y[i]!), r * 3, 0, Math.PI * 2);
      ctx.strokeStyle = '#000';
      ctx.lineWidth = 2;
      ctx.stroke();
    }
  }
}

/** Draws the clients down the left column, coloured by the listener their flow lands on; `moved` ones ringed. */
export function drawClients(ctx: CanvasRenderingContext2D, b: Box, x: number, listenerOf: Uint32Array, moved: Set<number>, size: number): void {
  const n = listenerOf.length;
  const h = Math.max(1, Math.min(size, (b.height / Math.max(1, n)) * 0.8));
  const w = Math.max(2, size);
  for (let c = 0; c <= OKABE_ITO.length; c++) {
    ctx.fillStyle = COLOURS[c]!;
    ctx.beginPath();
    for (let i = 0; i < n; i++) {
      const l = listenerOf[i]!;
      const ci = l === 0xffffffff ? OKABE_ITO.length : l % OKABE_ITO.length;
      if (ci !== c) continue;
      ctx.rect(px(b, x) - w / 2, py(b, (i + 0.5) / n) - h / 2, w, h);
    }
    ctx.fill();
  }
  if (moved.size) {
    // Moved flows: a black tick to the right of the client (a ring when there is room).
    ctx.strokeStyle = '#000';
    ctx.fillStyle = '#000';
    ctx.lineWidth = 1;
    ctx.beginPath();
    const room = b.height / Math.max(1, n) >= 4;
    for (const i of moved) {
      if (room) ctx.rect(px(b, x) - w / 2 - 3, py(b, (i + 0.5) / n) - h / 2 - 1, w + 6, h + 2);
      else ctx.rect(px(b, x) + w / 2 + 2, py(b, (i + 0.5) / n) - 0.5, 6, 1);
    }
    if (room) ctx.stroke();
    else ctx.fill();
  }
}

/** A polyline in scene coordinates (the focused packet's route). */
export function drawRoute(ctx: CanvasRenderingContext2D, b: Box, pts: readonly number[]): void {
  ctx.beginPath();
  for (let i = 0; i < pts.length; i += 2) (i === 0 ? ctx.moveTo.bind(ctx) : ctx.lineTo.bind(ctx))(px(b, pts[i]!), py(b, pts[i + 1]!));
  ctx.setLineDash([4, 3]);
  ctx.strokeStyle = '#333';
  ctx.lineWidth = 1.5;
  ctx.stroke();
  ctx.setLineDash([]);
}

/** Index in `f` of the packet nearest (x, y) CSS pixels within `maxDist`, or -1. */
export function hitTest(f: Frame, b: Box, x: number, y: number, maxDist: number): number {
  let best = -1;
  let bd = maxDist * maxDist;
  for (let i = 0; i < f.n; i++) {
    const dx = px(b, f.x[i]!) - x;
    const dy = py(b, f.y[i]!) - y;
    const d = dx * dx + dy * dy;
    if (d <= bd) {
      bd = d;
      best = i;
    }
  }
  return best;
}
