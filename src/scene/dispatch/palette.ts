/**
 * Colours and marks for listeners and packet kinds. Okabe-Ito (colour-blind
 * safe); beyond 8 listeners colours cycle and a fill style tells the cycles
 * apart, and every listener also carries its number as a label.
 */

/** Okabe-Ito, without black (kept for packets with no listener). */
export const OKABE_ITO = ['#E69F00', '#56B4E9', '#009E73', '#F0E442', '#0072B2', '#D55E00', '#CC79A7', '#999999'] as const;
/** Colour for packets that reached no socket. */
export const NO_LISTENER_COLOUR = '#000000';

/** How a listener's marks are filled: solid on the first cycle of 8, hollow on the second, and so on. */
export type FillStyle = 'solid' | 'hollow';

export interface ListenerMark {
  colour: string;
  /** Index into {@link OKABE_ITO}. */
  colourIndex: number;
  fill: FillStyle;
  label: string;
}

/** The mark of listener `l` (join order), or of "no socket" for null. */
export function listenerMark(l: number | null): ListenerMark {
  if (l === null) return { colour: NO_LISTENER_COLOUR, colourIndex: -1, fill: 'solid', label: 'none' };
  const colourIndex = l % OKABE_ITO.length;
  return { colour: OKABE_ITO[colourIndex]!, colourIndex, fill: Math.floor(l / OKABE_ITO.length) % 2 === 0 ? 'solid' : 'hollow', label: `L${l}` };
}

/** Packet kinds shown. */
export type PacketKind = 'SYN' | 'SYN-ACK' | 'ACK' | 'RST' | 'UDP';

/** Shape per kind: the kind is told by shape and by its label, never by colour alone. */
// Straight-edged shapes only: thousands of arcs per frame cost whole frames
// when the canvas is rasterised without a GPU (npm run bench:frames).
export const KIND_SHAPE: Record<PacketKind, 'square' | 'diamond' | 'bar' | 'cross' | 'triangle'> = {
  SYN: 'square',
  'SYN-ACK': 'diamond',
  ACK: 'bar',
  RST: 'cross',
  UDP: 'triangle',
};

export const KINDS: PacketKind[] = ['SYN', 'SYN-ACK', 'ACK', 'RST', 'UDP'];
