/**
 * The visualizer's canvas: clients, packets in flight and accept queues
 * stamped into one pixel buffer and put on the canvas in one call, then the
 * focused packet, its route and the inspected packet's ring as vector shapes
 * on top. It draws what the scene hands it ({@link StageFrame}) and keeps no
 * state of the simulation.
 */
import { COL } from '../../scene/dispatch/layout';
import type { Frame } from '../../scene/dispatch/sim';
import { queueBarMax, ROW_PARTS } from '../../scene/dispatch/tour';
import { drawPackets, drawRoute, Pixels, pixelWord, px, py, stampClients, stampMoved, stampPackets, type Box } from './particles';

/** One accept queue: its listener's row position (0..1 of the box) and length in connections. */
export interface QueueBar {
  y: number;
  length: number;
  /** Its worker is stalled: the bar is striped dark red. */
  stalled: boolean;
}

/** What one frame shows. */
export interface StageFrame {
  box: Box;
  /** The canvas width in CSS pixels. */
  cssW: number;
  /** The listener each client's flow reaches. */
  clientListener: Uint32Array;
  /** The packets in flight (the scene's frame). */
  packets: Frame;
  /** One bar per listener row, in row order. */
  queues: readonly QueueBar[];
  /** Clients whose flows moved at the last close or join. */
  moved: readonly number[];
  /** The focused packet on its route (stepping, paused), drawn large. */
  focus: { route: readonly number[]; packet: Frame; seq: number } | null;
  /** The inspected packet, ringed while in flight (paused). */
  inspected: number | null;
}

const QUEUE_WORD = pixelWord('#555555');
const STALLED_WORD = pixelWord('#a00000');

export class StageCanvas {
  readonly #canvas: HTMLCanvasElement;
  readonly #ctx: CanvasRenderingContext2D | null;
  readonly #pixels = new Pixels();

  constructor(canvas: HTMLCanvasElement) {
    this.#canvas = canvas;
    this.#ctx = canvas.getContext('2d');
  }

  /** Sizes the canvas to `w` × `h` CSS pixels at `dpr` device pixels each. */
  resize(w: number, h: number, dpr: number): void {
    this.#canvas.width = Math.round(w * dpr);
    this.#canvas.height = Math.round(h * dpr);
    this.#canvas.style.width = `${w}px`;
    this.#canvas.style.height = `${h}px`;
    this.#ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.#pixels.resize(Math.round(w * dpr), Math.round(h * dpr), dpr);
  }

  /** Draws one frame. */
  draw(f: StageFrame): void {
    const ctx = this.#ctx;
    if (!ctx) return;
    const pixels = this.#pixels;
    const b = f.box;
    pixels.clear();
    stampClients(pixels, b, COL.client, f.clientListener, 6);
    stampPackets(pixels, f.packets, b, 3);
    // Accept queues: 3 px a connection, scaled down together when the longest would not fit
    // (a stalled worker's keeps growing); a stalled worker's queue is striped dark red.
    const rh = b.height / Math.max(1, f.queues.length);
    const qx = px(b, COL.listener) + ROW_PARTS.queue;
    const qmax = queueBarMax(f.cssW, px(b, COL.listener));
    let longest = 0;
    for (const q of f.queues) longest = Math.max(longest, q.length);
    const perConn = Math.min(3, qmax / Math.max(1, longest));
    for (const q of f.queues) {
      if (q.length < 0.5) continue;
      const y = py(b, q.y) - Math.max(0.5, rh * 0.3);
      const h = Math.max(1, rh * 0.6);
      const len = Math.max(1, Math.min(qmax, q.length * perConn));
      if (!q.stalled) pixels.rect(qx, y, len, h, QUEUE_WORD);
      else for (let sx = 0; sx < len; sx += 4) pixels.rect(qx + sx, y, Math.min(3, len - sx), h, STALLED_WORD);
    }
    stampMoved(pixels, b, COL.client, f.clientListener.length, f.moved, 6);
    pixels.blit(ctx);
    if (f.focus) {
      drawRoute(ctx, b, f.focus.route);
      drawPackets(ctx, f.focus.packet, b, 6, f.focus.seq);
    }
    if (f.inspected !== null) {
      const p = f.packets;
      for (let i = 0; i < p.n; i++) {
        if (p.seq[i] !== f.inspected) continue;
        ctx.beginPath();
        ctx.arc(px(b, p.x[i]!), py(b, p.y[i]!), 9, 0, Math.PI * 2);
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 2;
        ctx.stroke();
      }
    }
  }
}
