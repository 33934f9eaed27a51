/**
 * Renders an {@link ExplainView} as accessible HTML: headings, definition
 * lists and real tables. Text only through textContent.
 */
import { select, type Selection } from 'd3';
import type { ExplainView, Section, Table } from '../scene/explain-view';

type Sel = Selection<HTMLElement, unknown, null, undefined>;

/** The card's own words. */
export interface ExplainCardText {
  kernel: (source: string) => string;
  fallback: (text: string) => string;
  caveats: string;
}

const EN: ExplainCardText = { kernel: (s) => `Kernel: ${s}`, fallback: (s) => `Fallback: ${s}`, caveats: 'Caveats' };

function renderTable(parent: Sel, t: Table): void {
  const table = parent.append('table').attr('class', 'rl-table');
  table.append('caption').text(t.caption);
  table
    .append('thead')
    .append('tr')
    .selectAll('th')
    .data(t.head)
    .join('th')
    .attr('scope', 'col')
    .text((d) => d);
  table
    .append('tbody')
    .selectAll('tr')
    .data(t.rows)
    .join('tr')
    .classed('rl-chosen', (_, i) => i === t.highlight)
    .attr('aria-current', (_, i) => (i === t.highlight ? 'true' : null))
    .selectAll('td')
    .data((r) => r)
    .join('td')
    .text((d) => d);
}

function renderSection(parent: Sel, s: Section, level: number, w: ExplainCardText): void {
  const sec = parent.append('section').attr('class', 'rl-section');
  sec.append(`h${level}`).text(s.title);
  if (s.source) sec.append('p').attr('class', 'rl-source').text(w.kernel(s.source));
  const dl = sec.append('dl');
  for (const r of s.rows) {
    dl.append('dt').text(r.label);
    dl.append('dd').classed('rl-mono', !!r.mono).text(r.value);
  }
  for (const t of s.tables) renderTable(sec, t);
}

/** Appends the explanation to `el`; `level` is the heading level of its sections. */
export function renderExplain(el: HTMLElement, v: ExplainView, level = 3, w: ExplainCardText = EN): void {
  const root = select(el);
  root.append('p').attr('class', 'rl-headline').text(v.headline);
  for (const s of v.sections) renderSection(root, s, level, w);
  if (v.fallback) root.append('p').attr('class', 'rl-fallback').text(w.fallback(v.fallback));
  if (v.notes.length) {
    const notes = root.append('section').attr('class', 'rl-notes');
    notes.append(`h${level}`).text(w.caveats);
    notes
      .append('ul')
      .selectAll('li')
      .data(v.notes)
      .join('li')
      .text((d) => d);
  }
}
