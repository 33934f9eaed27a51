/**
 * The dispatch visualizer's tables that change every frame: the event list
 * (a fixed set of rows reused in place, so a row under the keyboard focus is
 * never rebuilt), the workers table (one row per listener, joined by key),
 * and the figures list. The widget says what each row holds; these write it,
 * touching a cell only when its text changed. Text only through textContent.
 */
import type { Selection } from 'd3';

type Sel<E extends Element> = Selection<E, unknown, null, undefined>;

/** One row of the event list as the widget says it. */
export interface EventRow {
  /** The row head: the event's number, a button that inspects it. */
  label: string;
  /** The button's accessible name. */
  inspect: string;
  /** The event inspected (`rl-chosen`, `aria-current`). */
  chosen: boolean;
  cells: readonly string[];
}

/** The event list's rows: `count` rows of a head button and `cells` cells, made once under `tbody`. */
export class EventRows {
  readonly #rows: { tr: HTMLTableRowElement; btn: HTMLButtonElement; tds: HTMLTableCellElement[] }[] = [];

  constructor(tbody: Sel<HTMLTableSectionElement>, count: number, cells: number) {
    for (let i = 0; i < count; i++) {
      const tr = tbody.append('tr').property('hidden', true);
      const btn = tr.append('th').attr('scope', 'row').append('button').attr('type', 'button').attr('class', 'rl-dv-rowbtn');
      const tds = Array.from({ length: cells }, () => tr.append('td').node()!);
      this.#rows.push({ tr: tr.node()!, btn: btn.node()!, tds });
    }
  }

  /** How many rows there are. */
  get length(): number {
    return this.#rows.length;
  }

  /** Shows `rows` in order; the rows past them are hidden. */
  show(rows: readonly (EventRow | undefined)[]): void {
    this.#rows.forEach((r, i) => {
      const e = rows[i];
      r.tr.hidden = !e;
      if (!e) return;
      r.tr.classList.toggle('rl-chosen', e.chosen);
      if (e.chosen) r.tr.setAttribute('aria-current', 'true');
      else r.tr.removeAttribute('aria-current');
      if (r.btn.textContent !== e.label) {
        r.btn.textContent = e.label;
        r.btn.setAttribute('aria-label', e.inspect);
      }
      e.cells.forEach((c, k) => {
        if (r.tds[k]!.textContent !== c) r.tds[k]!.textContent = c;
      });
    });
  }
}

/** One row of the workers table: its key, its cells (the first heads the row), and whether the worker is stalled. */
export interface WorkerRow {
  key: string;
  cells: readonly string[];
  stalled: boolean;
}

/** Joins `rows` into the workers table's `tbody`, by key. */
export function drawWorkerRows(tbody: Sel<HTMLTableSectionElement>, rows: readonly WorkerRow[], cells: number): void {
  tbody
    .selectAll<HTMLTableRowElement, WorkerRow>('tr')
    .data(rows, (d) => d.key)
    .join((e) => {
      const tr = e.append('tr');
      tr.append('th').attr('scope', 'row');
      for (let k = 1; k < cells; k++) tr.append('td');
      return tr;
    })
    .classed('rl-dv-stalled', (d) => d.stalled)
    .each(function (d) {
      const row = (this as HTMLTableRowElement).cells;
      d.cells.forEach((v, k) => {
        if (row[k]!.textContent !== v) row[k]!.textContent = v;
      });
    });
}

/** The figures as `<div><dt>name</dt><dd>value</dd></div>` pairs under the list `dl`. */
export function drawFigures(dl: Sel<HTMLDListElement>, items: readonly (readonly [string, string])[]): void {
  dl.selectAll('div')
    .data(items)
    .join((e) => {
      const d = e.append('div');
      d.append('dt');
      d.append('dd');
      return d;
    });
  dl.selectAll('div')
    .select('dt')
    .text((d) => (d as [string, string])[0]);
  dl.selectAll('div')
    .select('dd')
    .text((d) => (d as [string, string])[1]);
}
