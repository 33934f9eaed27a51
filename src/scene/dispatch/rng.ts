/**
 * Seeded randomness for the visualizer: the same seed gives the same
 * clients, the same arrivals and the same boots, so runs reproduce.
 * (Only the simulation's inputs are random; every kernel answer comes from
 * the model.)
 */

/** A 32-bit mix of two words (splitmix-style finaliser). */
export function mix32(a: number, b: number): number {
  let h = (Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x7f4a7c15, 0xc2b2ae35)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A deterministic stream of 32-bit values (mulberry32). */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0;
  }
  /** The next unsigned 32-bit value. */
  u32(): number {
    this.#s = (this.#s + 0x6d2b79f5) >>> 0;
    let t = this.#s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  /** A whole number in [0, n). */
  below(n: number): number {
    return Math.floor((this.u32() / 4294967296) * n);
  }
  /** A float in [0, 1). */
  unit(): number {
    return this.u32() / 4294967296;
  }
}

/** The secret of boot number `boot` drawn from `seed` (boot 0 is the first). */
export function bootSecret(seed: number, boot: number): number {
  return mix32(seed, 0xb007 + boot);
}

export { hex32, parseHex32 } from '../../hex';
