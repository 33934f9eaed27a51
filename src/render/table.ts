/**
 * Tables as the widgets draw them: a caption, a row of column heads, and
 * rows of cells, some rows marked as the chosen ones (`rl-chosen` and
 * `aria-current`). Text only through textContent; a cell may also be an
 * element the widget made (a select, a button). Every widget table is
 * built here, with {@link tableElement} or, under a d3 selection,
 * {@link renderTextTable}.
 */
import type { Selection } from 'd3';

// biome-ignore lint/suspicious/noExplicitAny: d3's Selection is generic in element and data; a table goes under any element
type Parent = Selection<any, unknown, null, undefined>;

/** One cell: text, text with a class, or an element the caller made. */
export type Cell = string | { text: string; className: string } | Node;

/** What a table shows. */
export interface TableSpec {
  /** @default none */
  caption?: string;
  /** The caption's classes. @default none */
  captionClass?: string;
  /** Column heads (a `thead` row, `scope="col"`). @default none */
  head?: readonly string[];
  rows: readonly (readonly Cell[])[];
  /** The first cell of every row heads it (`th scope="row"`). @default false */
  rowHeads?: boolean;
  /** Whether row `i` is a chosen one (the receiving socket, the picked slot, your row). @default none */
  chosen?: (i: number) => boolean;
  /** `data-*` attributes of row `i` (without the prefix). @default none */
  data?: (i: number) => Record<string, string>;
  /** The table's classes; null for none. @default "rl-table" */
  className?: string | null;
}

function cell(tag: 'td' | 'th', c: Cell, row: boolean): HTMLTableCellElement {
  const e = document.createElement(tag);
  if (row) e.scope = 'row';
  if (typeof c === 'string') e.textContent = c;
  else if (c instanceof Node) e.append(c);
  else {
    e.textContent = c.text;
    e.className = c.className;
  }
  return e;
}

/** The table as an element, not yet in the page. */
export function tableElement(t: TableSpec): HTMLTableElement {
  const table = document.createElement('table');
  const cls = t.className === undefined ? 'rl-table' : t.className;
  if (cls) table.className = cls;
  if (t.caption !== undefined) {
    const cap = table.createCaption();
    cap.textContent = t.caption;
    if (t.captionClass) cap.className = t.captionClass;
  }
  if (t.head) {
    const hr = table.createTHead().insertRow();
    for (const h of t.head) {
      const th = cell('th', h, false);
      th.scope = 'col';
      hr.append(th);
    }
  }
  const body = table.createTBody();
  t.rows.forEach((r, i) => {
    const tr = body.insertRow();
    if (t.chosen?.(i)) {
      tr.className = 'rl-chosen';
      tr.setAttribute('aria-current', 'true');
    }
    for (const [k, v] of Object.entries(t.data?.(i) ?? {})) tr.dataset[k] = v;
    r.forEach((c, j) => {
      tr.append(cell(t.rowHeads && j === 0 ? 'th' : 'td', c, !!t.rowHeads && j === 0));
    });
  });
  return table;
}

/** Appends the table to `parent`; returns it. */
export function renderTextTable(parent: Parent, t: TableSpec): Selection<HTMLTableElement, unknown, null, undefined> {
  return parent.append(() => tableElement(t));
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
