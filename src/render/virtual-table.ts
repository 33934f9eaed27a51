/**
 * A table of any number of rows that renders only the rows in view: a
 * scrolling box, a spacer as tall as every row, and one real `<table>`
 * (with `aria-rowcount` and each row's `aria-rowindex`, so screen readers
 * know where they are) moved to the scroll position. Rows are fetched on
 * demand, so the page holds none of them; a million rows cost what forty do.
 */

/** One row as text cells; the last column may carry an action. */
export type Cells = string[];

export interface VirtualTableOptions {
  caption: string;
  columns: string[];
  /** Fetches rows `start .. start + count` (fewer at the end). */
  rows: (start: number, count: number) => Promise<Cells[]>;
  /** A button in each row, and what it does with the row's index. */
  action?: { label: (row: number, cells: Cells) => string; text: string; run: (row: number) => void };
  /** Pixels per row (fixed, so the spacer's height is exact). @default 28 */
  rowHeight?: number;
  /**
   * Cells wrap instead of running on in one line, so a long sentence does not push the last columns out of view;
   * on a narrow screen each row stacks its cells, each labelled with its column. A row is then as tall as its text,
   * and the scroll range is built on an estimate (three lines a row, or seven when stacked) in place of `rowHeight`.
   * @default false
   */
  wrap?: boolean;
}

export interface VirtualTable {
  /** Replaces the row count (after a filter) and redraws from the top. */
  setCount(n: number): void;
  /** Redraws the rows in view (after the answers changed). */
  refresh(): void;
  dispose(): void;
}

/** Browsers cap an element's height (about 33 M px in Chromium): beyond it rows are scaled onto the scroll range. */
const MAX_SCROLL_PX = 8_000_000;

export function renderVirtualTable(parent: HTMLElement, opts: VirtualTableOptions): VirtualTable {
  const fixedH = opts.rowHeight ?? 28;
  // Wrapped rows: about three lines of text each, or seven when a narrow screen stacks the cells (styles/paste.css).
  const rowH = () => (opts.wrap ? (box.clientWidth >= 640 ? 72 : 168) : fixedH);
  const box = document.createElement('div');
  box.className = opts.wrap ? 'rl-vt rl-vt-wrap' : 'rl-vt';
  box.tabIndex = 0;
  box.setAttribute('role', 'region');
  box.setAttribute('aria-label', opts.caption);
  const spacer = document.createElement('div');
  spacer.className = 'rl-vt-spacer';
  const table = document.createElement('table');
  table.className = 'rl-table rl-vt-table';
  const cap = table.createCaption();
  cap.textContent = opts.caption;
  cap.className = 'rl-sr-only';
  const head = table.createTHead().insertRow();
  head.setAttribute('aria-rowindex', '1');
  for (const c of opts.columns) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = c;
    head.appendChild(th);
  }
  if (opts.action) {
    // The action column's header is read by screen readers, not shown.
    const th = document.createElement('th');
    th.scope = 'col';
    const label = document.createElement('span');
    label.className = 'rl-sr-only';
    label.textContent = opts.action.text;
    th.appendChild(label);
    head.appendChild(th);
  }
  const body = table.createTBody();
  box.append(spacer, table);
  parent.appendChild(box);

  let count = 0;
  let gen = 0;
  let frame = 0;
  const scale = () => Math.min(1, MAX_SCROLL_PX / Math.max(1, count * rowH()));

  /** The scroll range: every row at its estimated height (the header row is one row tall too). */
  const size = () => {
    spacer.style.height = `${Math.round((count + 1) * rowH() * scale())}px`;
  };

  const draw = () => {
    frame = 0;
    // A wrapped row's estimate follows the box's width (a closed <details> has none until it opens).
    if (opts.wrap) size();
    const s = scale();
    const first = Math.max(0, Math.floor(box.scrollTop / s / rowH()));
    const visible = Math.ceil(box.clientHeight / rowH()) + 2;
    const n = Math.max(0, Math.min(visible, count - first));
    const mine = ++gen;
    void opts.rows(first, n).then((rows) => {
      if (mine !== gen) return;
      // The table sits where its first row belongs in the (possibly scaled) scroll range.
      table.style.transform = `translateY(${Math.round(first * rowH() * s)}px)`;
      const focused = body.contains(document.activeElement) ? (document.activeElement as HTMLElement).dataset.row : undefined;
      body.replaceChildren(
        ...rows.map((cells, i) => {
          const tr = document.createElement('tr');
          tr.setAttribute('aria-rowindex', String(first + i + 2));
          cells.forEach((c, k) => {
            const td = document.createElement('td');
            td.textContent = c;
            // A stacked row (narrow screens) names each cell's column.
            if (opts.wrap) td.dataset.label = opts.columns[k] ?? '';
            tr.appendChild(td);
          });
          if (opts.action) {
            const td = document.createElement('td');
            const b = document.createElement('button');
            b.type = 'button';
            b.textContent = opts.action.text;
            b.dataset.row = String(first + i);
            b.setAttribute('aria-label', opts.action.label(first + i, cells));
            b.addEventListener('click', () => opts.action!.run(first + i));
            td.appendChild(b);
            tr.appendChild(td);
          }
          return tr;
        }),
      );
      // Keep keyboard focus on the same row's button across redraws.
      if (focused !== undefined) body.querySelector<HTMLElement>(`button[data-row="${focused}"]`)?.focus({ preventScroll: true });
    });
  };
  const schedule = () => {
    if (!frame) frame = requestAnimationFrame(draw);
  };
  box.addEventListener('scroll', schedule, { passive: true });
  const ro = new ResizeObserver(schedule);
  ro.observe(box);

  return {
    setCount(n: number) {
      count = n;
      table.setAttribute('aria-rowcount', String(n + 1));
      // The header row is one row tall too: a short table's box fits it exactly.
      size();
      box.scrollTop = 0;
      schedule();
    },
    refresh: schedule,
    dispose() {
      gen++;
      if (frame) cancelAnimationFrame(frame);
      ro.disconnect();
      box.remove();
    },
  };
}
