import type { BaseType, Selection } from 'd3';
import { el, field, h } from '../render/dom';

export { el, field, h };

/** Fills a select with `[value, label]` options and, when given, chooses `value`. */
export function selectOptions<P extends BaseType, PD>(
  sel: Selection<HTMLSelectElement, unknown, P, PD>,
  options: readonly (readonly [value: string, label: string])[],
  value?: string,
): Selection<HTMLSelectElement, unknown, P, PD> {
  sel
    .selectAll('option')
    .data(options)
    .join('option')
    .attr('value', (d) => d[0])
    .text((d) => d[1]);
  if (value !== undefined) sel.property('value', value);
  return sel;
}

/** The protocol choice of every form: value and label. */
export const PROTO_OPTIONS = [
  ['tcp', 'TCP'],
  ['udp', 'UDP'],
] as const;

/** A long run's status line, progress bar and error line, appended to `root` (the bar and the error hidden until used). */
export function runStatus(root: HTMLElement): { status: HTMLParagraphElement; bar: HTMLProgressElement; error: HTMLParagraphElement } {
  const status = root.appendChild(h('p', 'rl-sc-status', '', { role: 'status', 'aria-live': 'polite' }));
  const bar = root.appendChild(h('progress', 'rl-sc-progress', '', { max: '1', value: '0' }));
  bar.hidden = true;
  const error = root.appendChild(h('p', 'rl-sc-alert', '', { role: 'alert' }));
  error.hidden = true;
  return { status, bar, error };
}

/**
 * Lets the browser handle input and paint before the caller goes on: a widget's
 * first build yields between its steps, so no single task holds the main thread
 * long (Lighthouse counts every task over 50 ms as blocking). Uses
 * `scheduler.yield()` where the browser has it, a zero-delay timer elsewhere.
 */
export function yieldToMain(): Promise<void> {
  const s = (globalThis as { scheduler?: { yield?: () => Promise<void> } }).scheduler;
  if (typeof s?.yield === 'function') return s.yield();
  return new Promise((resolve) => setTimeout(resolve, 0));
}
