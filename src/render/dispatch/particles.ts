/**
 * Draws the clients and the packets in flight on a canvas: thousands of
 * marks stamped into one pixel buffer ({@link Pixels}), the focused packet
 * and its route as vector shapes on top. Kinds are told apart by shape (SYN
 * square, SYN-ACK diamond, ACK bar, RST cross, UDP triangle); listeners by
 * Okabe-Ito colour, hollow marks on every second cycle of 8, and every mark
 * has a dark outline (yellow and sky blue are 1.3:1 and 2.3:1 on white).
 */
import { NO_LISTENER } from '../../model/index';
import { OKABE_ITO, NO_LISTENER_COLOUR } from '../../scene/dispatch/palette';
import type { Frame } from '../../scene/dispatch/sim';

/** Dark outline of every mark (as the overlay's). */
const OUTLINE_DARK = '#1d1d1f';

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

/** Okabe-Ito (and black) as little-endian RGBA words for {@link Pixels}. */
const WORDS = COLOURS.map((c) => rgbaWord(c));
const DARK = rgbaWord(OUTLINE_DARK);
const WHITE = rgbaWord('#ffffff');
const BLACK = rgbaWord('#000000');

function rgbaWord(hex: string): number {
  const n = parseInt(hex.slice(1), 16);
  return ((255 << 24) | ((n & 255) << 16) | (n & 0xff00) | ((n >>> 16) & 255)) >>> 0;
}

/** A shape as pixel offsets from its centre: the fill, its border (for hollow marks), and a one-pixel dark ring around it. */
interface Stamp {
  fill: Int16Array;
  border: Int16Array;
  ring: Int16Array;
}

/** Whether device pixel (dx, dy) from the centre lies in the shape of `kind` of radius `r` (device pixels). */
function inside(kind: number, dx: number, dy: number, r: number): boolean {
  const ax = Math.abs(dx);
  const ay = Math.abs(dy);
  switch (kind) {
    case 0: // SYN: square
      return ax <= r && ay <= r;
    case 1: // SYN-ACK: diamond
      return ax + ay <= r * 1.3;
    case 2: // ACK: bar
      return ax <= r * 1.4 && ay <= Math.max(1, r * 0.5);
    case 3: // RST: cross
      return Math.abs(ax - ay) <= Math.max(0.75, r * 0.25) && ax <= r;
    default: // UDP: triangle, apex up
      return dy <= r * 0.8 && dy >= -r * 1.2 && ax <= ((dy + r * 1.2) / (r * 2)) * r * 1.1;
  }
}

function stamp(kind: number, r: number): Stamp {
  const R = Math.ceil(r * 1.5) + 1;
  const fill: number[] = [];
  const border: number[] = [];
  const ring: number[] = [];
  const at = (x: number, y: number) => x >= -R && x <= R && y >= -R && y <= R && inside(kind, x, y, r);
  for (let y = -R; y <= R; y++)
    for (let x = -R; x <= R; x++) {
      const near = at(x - 1, y) || at(x + 1, y) || at(x, y - 1) || at(x, y + 1);
      if (at(x, y)) {
        fill.push(x, y);
        if (!(at(x - 1, y) && at(x + 1, y) && at(x, y - 1) && at(x, y + 1))) border.push(x, y);
      } else if (near || at(x - 1, y - 1) || at(x + 1, y + 1) || at(x - 1, y + 1) || at(x + 1, y - 1)) ring.push(x, y);
    }
  return { fill: Int16Array.from(fill), border: Int16Array.from(border), ring: Int16Array.from(ring) };
}

/**
 * The canvas's many small marks (clients, packets, accept queues) written
 * straight into one RGBA buffer and put on the canvas in one call. Without a
 * GPU, filling a path of thousands of shapes cost whole frames in the
 * rasteriser (outside the script's own time); stamping precomputed pixel
 * masks costs a few microseconds per thousand marks and nothing after.
 */
export class Pixels {
  image: ImageData | null = null;
  #u32 = new Uint32Array(0);
  #w = 0;
  #h = 0;
  #scale = 1;
  #stamps = new Map<string, Stamp>();

  /** Sizes the buffer to the canvas (device pixels) for a CSS-to-device `scale`. */
  resize(width: number, height: number, scale: number): void {
    if (typeof ImageData === 'undefined' || width <= 0 || height <= 0) return;
    this.image = new ImageData(width, height);
    this.#u32 = new Uint32Array(this.image.data.buffer);
    this.#w = width;
    this.#h = height;
    this.#scale = scale;
    this.#stamps.clear();
  }

  clear(): void {
    this.#u32.fill(0);
  }

  /** Fills a rectangle given in CSS pixels with colour index `c` (of Okabe-Ito, then black). */
  rect(x: number, y: number, w: number, h: number, word: number): void {
    const s = this.#scale;
    const x0 = Math.max(0, Math.round(x * s));
    const y0 = Math.max(0, Math.round(y * s));
    const x1 = Math.min(this.#w, Math.max(x0 + 1, Math.round((x + w) * s)));
    const y1 = Math.min(this.#h, Math.max(y0 + 1, Math.round((y + h) * s)));
    const u = this.#u32;
    for (let yy = y0; yy < y1; yy++) u.fill(word, yy * this.#w + x0, yy * this.#w + x1);
  }

  #stamp(kind: number, r: number): Stamp {
    const key = `${kind}/${r}`;
    let st = this.#stamps.get(key);
    if (!st) {
      st = stamp(kind, r * this.#scale);
      this.#stamps.set(key, st);
    }
    return st;
  }

  #put(offs: Int16Array, cx: number, cy: number, word: number): void {
    const u = this.#u32;
    const w = this.#w;
    const h = this.#h;
    for (let k = 0; k < offs.length; k += 2) {
      const x = cx + offs[k]!;
      const y = cy + offs[k + 1]!;
      if (x >= 0 && y >= 0 && x < w && y < h) u[y * w + x] = word;
    }
  }

  /** One mark of `kind` at (x, y) CSS pixels: dark ring, then the colour (hollow: white inside a coloured border). */
  mark(kind: number, x: number, y: number, r: number, colour: number, hollow: boolean): void {
    const st = this.#stamp(kind, r);
    const cx = Math.round(x * this.#scale);
    const cy = Math.round(y * this.#scale);
    this.#put(st.ring, cx, cy, DARK);
    if (hollow) {
      this.#put(st.fill, cx, cy, WHITE);
      this.#put(st.border, cx, cy, WORDS[colour]!);
    } else this.#put(st.fill, cx, cy, WORDS[colour]!);
  }

  /** Puts the buffer on the canvas (replacing what was there). */
  blit(ctx: CanvasRenderingContext2D): void {
    if (this.image) ctx.putImageData(this.image, 0, 0);
  }
}

/** Colour index (into Okabe-Ito, then black for none) and fill of listener `l` ({@link NO_LISTENER}: none). */
function colourOf(l: number): { c: number; hollow: boolean } {
  if (l === NO_LISTENER) return { c: OKABE_ITO.length, hollow: false };
  return { c: l % OKABE_ITO.length, hollow: Math.floor(l / OKABE_ITO.length) % 2 === 1 };
}

/** Stamps the packets of `f` into `px`. */
export function stampPackets(pix: Pixels, f: Frame, b: Box, r: number): void {
  for (let i = 0; i < f.n; i++) {
    const { c, hollow } = colourOf(f.listener[i]!);
    pix.mark(f.kind[i]!, px(b, f.x[i]!), py(b, f.y[i]!), r, c, hollow);
  }
}

/** Stamps the clients down the left column, coloured by the listener their flow lands on. */
export function stampClients(pix: Pixels, b: Box, x: number, listenerOf: Uint32Array, size: number): void {
  const n = listenerOf.length;
  const h = Math.max(1, Math.min(size, (b.height / Math.max(1, n)) * 0.8));
  const w = Math.max(2, size);
  for (let i = 0; i < n; i++) {
    const { c } = colourOf(listenerOf[i]!);
    pix.rect(px(b, x) - w / 2, py(b, (i + 0.5) / n) - h / 2, w, h, WORDS[c]!);
  }
}

/** The word of a colour for {@link Pixels.rect}. */
export const pixelWord = rgbaWord;

/** Draws the packets of `f` as vector shapes (the focused packet); `highlight` is a seq drawn larger with a ring. */
export function drawPackets(ctx: CanvasRenderingContext2D, f: Frame, b: Box, r: number, highlight: number | null): void {
  for (let i = 0; i < f.n; i++) {
    const { c, hollow } = colourOf(f.listener[i]!);
    const k = f.kind[i]!;
    ctx.beginPath();
    shape(ctx, k, px(b, f.x[i]!), py(b, f.y[i]!), r);
    ctx.lineWidth = 3;
    ctx.strokeStyle = OUTLINE_DARK;
    ctx.stroke();
    ctx.lineWidth = 1.5;
    if (hollow || k === 3) {
      if (k !== 3) {
        ctx.fillStyle = '#fff';
        ctx.fill();
      }
      ctx.strokeStyle = COLOURS[c]!;
      ctx.stroke();
    } else {
      ctx.fillStyle = COLOURS[c]!;
      ctx.fill();
    }
    if (f.seq[i] === highlight) {
      ctx.beginPath();
      ctx.arc(px(b, f.x[i]!), py(b, f.y[i]!), r * 3, 0, Math.PI * 2);
      ctx.strokeStyle = '#000';
      ctx.lineWidth = 2;
      ctx.stroke();
    }
  }
}

/** Marks the clients whose flow moved at the last group change: a black frame round each (a tick beside it when rows are thin). */
export function stampMoved(pix: Pixels, b: Box, x: number, n: number, moved: readonly number[], size: number): void {
  if (!moved.length) return;
  const h = Math.max(1, Math.min(size, (b.height / Math.max(1, n)) * 0.8));
  const w = Math.max(2, size);
  const room = b.height / Math.max(1, n) >= 4;
  const cx = px(b, x);
  for (const i of moved) {
    const cy = py(b, (i + 0.5) / n);
    if (!room) {
      pix.rect(cx + w / 2 + 2, cy - 0.5, 6, 1, BLACK);
      continue;
    }
    const l = cx - w / 2 - 3;
    const t = cy - h / 2 - 2;
    pix.rect(l, t, w + 6, 1, BLACK);
    pix.rect(l, t + h + 3, w + 6, 1, BLACK);
    pix.rect(l, t, 1, h + 4, BLACK);
    pix.rect(l + w + 5, t, 1, h + 4, BLACK);
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
