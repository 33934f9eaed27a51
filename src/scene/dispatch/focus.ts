/**
 * The focused packet while stepping: where on its route it is, `now` into
 * its travel, as a one-packet frame the stage draws large. Plain data; the
 * stage (render/dispatch/stage.ts) draws it.
 */
import { NO_LISTENER } from '../../model/index';
import { along, hashToY } from './layout';
import { KINDS } from './palette';
import type { DispatchSim, Frame } from './sim';

/** Milliseconds the focused packet takes to travel its route when stepping. */
export const FOCUS_MS = 900;

/** The focused packet's route (x, y pairs in scene units), the packet on it, and its number. */
export interface Focused {
  route: readonly number[];
  packet: Frame;
  seq: number;
}

/**
 * Packet `focus.seq` on its route, `now - focus.start` milliseconds into its travel (at its end under reduced motion),
 * written into `one`; null when the event is no longer in the log.
 */
export function focusedPacket(sim: DispatchSim, focus: { seq: number; start: number }, now: number, reduced: boolean, one: Frame): Focused | null {
  const e = sim.log.get(focus.seq);
  if (!e) return null;
  const route = sim.path(e.kind, e.client, e.hash === null ? 0.5 : hashToY(e.hash), e.listener ?? NO_LISTENER);
  const u = reduced ? 1 : Math.min(1, (now - focus.start) / FOCUS_MS);
  const p = { x: 0, y: 0 };
  along(route.pts, route.w, u, p);
  one.n = 1;
  one.x[0] = p.x;
  one.y[0] = p.y;
  one.kind[0] = KINDS.indexOf(e.kind);
  one.listener[0] = e.listener ?? NO_LISTENER;
  one.seq[0] = e.seq;
  return { route: route.pts, packet: one, seq: e.seq };
}
