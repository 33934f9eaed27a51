/**
 * A table of text as the widgets draw it: a caption, a row of column heads,
 * and rows of cells, some rows marked as the chosen ones. Text only through
 * textContent; the chosen rows carry `aria-current`.
 */
import type { Selection } from 'd3';

// biome-ignore lint/suspicious/noExplicitAny: d3's Selection is generic in element and data; a table goes under any element
type Parent = Selection<any, unknown, null, undefined>;

/** What a table shows. */
export interface TextTable {
  caption: string;
  head: readonly string[];
  rows: readonly (readonly string[])[];
  /** Whether row `i` is a chosen one (the receiving socket, the picked slot). @default none */
  chosen?: (i: number) => boolean;
  /** The table's classes. @default "rl-table" */
  className?: string;
}

/** Appends the table to `parent`; returns it. */
export function renderTextTable(parent: Parent, t: TextTable): Selection<HTMLTableElement, unknown, null, undefined> {
  const chosen = t.chosen ?? (() => false);
  const table = parent.append('table').attr('class', t.className ?? 'rl-table');
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
    .classed('rl-chosen', (_, i) => chosen(i))
    .attr('aria-current', (_, i) => (chosen(i) ? 'true' : null))
    .selectAll('td')
    .data((r) => r)
    .join('td')
    .text((d) => d);
  return table;
}

/** Appends a section with a heading and a list of notes (nothing when there are none). */
export function renderNotes(parent: Parent, heading: string, level: number, notes: readonly string[]): void {
  if (!notes.length) return;
  const s = parent.append('section').attr('class', 'rl-notes');
  s.append(`h${level}`).text(heading);
  s.append('ul')
    .selectAll('li')
    .data(notes)
    .join('li')
    .text((d) => d);
}
