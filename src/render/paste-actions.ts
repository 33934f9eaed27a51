/**
 * The paste analyser's two sections of actions: the key search (a button,
 * Cancel, progress, and the secrets found, with a button to answer under the
 * first) and the export (CSV, JSON, a link). These build the controls and
 * draw results; the widget wires what the buttons do. Text only through
 * textContent.
 */
import type { Recovered } from '../model/recover';
import { hex32 } from '../hex';
import { el } from './dom';
import type { PasteText } from './paste-text';

/** The key search's section and its controls. */
export interface RecoverSection {
  section: HTMLElement;
  /** Absent when no row carries an observed listener: there is nothing to search with. */
  controls?: {
    start: HTMLButtonElement;
    stop: HTMLButtonElement;
    progress: HTMLProgressElement;
    note: HTMLParagraphElement;
    result: HTMLDivElement;
  };
}

/** The key search's section for `observed` rows with a listener (none: it says what the search needs). */
export function recoverSection(t: PasteText, observed: number): RecoverSection {
  const sec = el('section', { class: 'rl-paste-recover' });
  sec.append(el('h2', {}, t.recoverTitle));
  sec.append(el('p', {}, observed ? t.recoverLead(observed) : t.recoverNeeds));
  if (!observed) return { section: sec };
  const start = el('button', { type: 'button' }, t.recoverGo);
  const stop = el('button', { type: 'button', hidden: true }, t.cancel);
  const progress = el('progress', { max: 1, value: 0, hidden: true });
  progress.setAttribute('aria-label', t.recoverTitle);
  const note = el('p');
  note.setAttribute('aria-live', 'polite');
  const result = el('div');
  sec.append(el('div', { class: 'rl-actions' }, start, stop), progress, note, result);
  return { section: sec, controls: { start, stop, progress, note, result } };
}

/** Draws what the key search found in `box`; `onUse` answers under the one secret found, when the search is complete. */
export function showRecovered(box: HTMLElement, r: Recovered, t: PasteText, onUse: (secret: string) => void): void {
  box.replaceChildren();
  box.append(el('p', {}, t.recovered(r)));
  if (r.values.length) {
    const ul = el('ul', { class: 'rl-candidates' });
    for (const v of r.values.slice(0, 16)) ul.append(el('li', {}, hex32(v)));
    box.append(ul);
  }
  if (r.candidates >= 1 && r.complete) {
    const use = el('button', { type: 'button' }, t.useRecovered(hex32(r.values[0]!)));
    use.addEventListener('click', () => onUse(hex32(r.values[0]!)));
    box.append(use);
  }
}

/** The export section's buttons and its note. */
export interface ExportSection {
  section: HTMLElement;
  csv: HTMLButtonElement;
  json: HTMLButtonElement;
  share: HTMLButtonElement;
  note: HTMLParagraphElement;
}

/** The export section: CSV, JSON and a link, and a note that says what a click did. */
export function exportSection(t: PasteText): ExportSection {
  const section = el('section', { class: 'rl-paste-export' });
  section.append(el('h2', {}, t.exportTitle));
  const csv = el('button', { type: 'button' }, t.exportCsv);
  const json = el('button', { type: 'button' }, t.exportJson);
  const share = el('button', { type: 'button' }, t.share);
  const note = el('p', { class: 'rl-hint' });
  note.setAttribute('aria-live', 'polite');
  section.append(el('div', { class: 'rl-actions' }, csv, json, share), note);
  return { section, csv, json, share, note };
}
