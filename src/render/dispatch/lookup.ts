/**
 * Renders a {@link LookupView} as accessible HTML: one real table per bucket
 * walked, a row per candidate socket (the receiving socket's row marked).
 * Text only through textContent.
 */
import { select } from 'd3';
import type { LookupView } from '../../scene/dispatch/lookup';
import { renderNotes, renderTextTable } from '../table';

/** The panel's words. */
export interface LookupText {
  table: (i: number, caption: string) => string;
  source: (source: string, daddr: string) => string;
  candidates: (caption: string) => string;
  noCandidate: string;
  why: (reason: string) => string;
  refused: string;
  caveats: string;
}

/** The panel's English words (the default). */
export const LOOKUP_TEXT_EN: LookupText = {
  table: (i, c) => `Table ${i}: ${c}`,
  source: (s, d) => `Kernel: ${s}; scores compare against ${d}`,
  candidates: (c) => `Candidates in ${c}, in list order`,
  noCandidate: 'No candidate in this bucket.',
  why: (r) => `Why: ${r}.`,
  refused: 'Calls the model refused',
  caveats: 'Lookup caveats',
};

/** Appends the lookup to `el`; `level` is the heading level of its parts. */
export function renderLookup(el: HTMLElement, layoutText: string, v: LookupView, level = 3, t: LookupText = LOOKUP_TEXT_EN): void {
  const root = select(el);
  root.append('p').attr('class', 'rl-dv-lookup-layout').text(layoutText);
  root.append('p').attr('class', 'rl-headline rl-dv-lookup-head').text(v.headline);
  if (v.skLookup) root.append('p').text(`sk_lookup: ${v.skLookup}`);
  const walks = root.append('div').attr('class', 'rl-dv-walks');
  v.walks.forEach((w, i) => {
    const sec = walks.append('section').attr('class', 'rl-dv-walk');
    sec.append(`h${level}`).text(t.table(i + 1, w.caption));
    sec.append('p').attr('class', 'rl-source').text(t.source(w.source, w.daddr));
    renderTextTable(sec, {
      caption: t.candidates(w.caption),
      head: w.head,
      rows: w.rows,
      chosen: (r) => w.highlight.includes(r),
      className: 'rl-table rl-dv-candidates',
    });
    if (!w.rows.length) sec.append('p').text(t.noCandidate);
  });
  if (v.groupLine) root.append('p').attr('class', 'rl-dv-lookup-group').text(v.groupLine);
  root.append('p').attr('class', 'rl-dv-lookup-reason').text(t.why(v.reason));
  renderNotes(root, t.refused, level, v.refusals);
  renderNotes(root, t.caveats, level, v.notes);
}
