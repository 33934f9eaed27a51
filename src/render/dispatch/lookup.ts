/**
 * Renders a {@link LookupView} as accessible HTML: one real table per bucket
 * walked, a row per candidate socket (the receiving socket's row marked).
 * Text only through textContent.
 */
import { select } from 'd3';
import type { LookupView } from '../../scene/dispatch/lookup';

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
    const table = sec.append('table').attr('class', 'rl-table rl-dv-candidates');
    table.append('caption').text(t.candidates(w.caption));
    table
      .append('thead')
      .append('tr')
      .selectAll('th')
      .data(w.head)
      .join('th')
      .attr('scope', 'col')
      .text((d) => d);
    table
      .append('tbody')
      .selectAll('tr')
      .data(w.rows)
      .join('tr')
      .classed('rl-chosen', (_, r) => w.highlight.includes(r))
      .attr('aria-current', (_, r) => (w.highlight.includes(r) ? 'true' : null))
      .selectAll('td')
      .data((r) => r)
      .join('td')
      .text((d) => d);
    if (!w.rows.length) sec.append('p').text(t.noCandidate);
  });
  if (v.groupLine) root.append('p').attr('class', 'rl-dv-lookup-group').text(v.groupLine);
  root.append('p').attr('class', 'rl-dv-lookup-reason').text(t.why(v.reason));
  if (v.refusals.length) {
    const s = root.append('section').attr('class', 'rl-notes');
    s.append(`h${level}`).text(t.refused);
    s.append('ul')
      .selectAll('li')
      .data(v.refusals)
      .join('li')
      .text((d) => d);
  }
  if (v.notes.length) {
    const s = root.append('section').attr('class', 'rl-notes');
    s.append(`h${level}`).text(t.caveats);
    s.append('ul')
      .selectAll('li')
      .data(v.notes)
      .join('li')
      .text((d) => d);
  }
}
