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
  const rowH = opts.rowHeight ?? 28;
  const box = document.createElement('div');
  box.className = 'rl-vt';
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
  const scale = () => Math.min(1, MAX_SCROLL_PX / Math.max(1, count * rowH));

  const draw = () => {
    frame = 0;
    const s = scale();
    const first = Math.max(0, Math.floor(box.scrollTop / s / rowH));
    const visible = Math.ceil(box.clientHeight / rowH) + 2;
    const n = Math.max(0, Math.min(visible, count - first));
    const mine = ++gen;
    void opts.rows(first, n).then((rows) => {
      if (mine !== gen) return;
      // The table sits where its first row belongs in the (possibly scaled) scroll range.
      table.style.transform = `translateY(${Math.round(first * rowH * s)}px)`;
      const focused = body.contains(document.activeElement) ? (document.activeElement as HTMLElement).dataset.row : undefined;
      body.replaceChildren(
        ...rows.map((cells, i) => {
          const tr = document.createElement('tr');
          tr.setAttribute('aria-rowindex', String(first + i + 2));
          for (const c of cells) {
            const td = document.createElement('td');
            td.textContent = c;
            tr.appendChild(td);
          }
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
      spacer.style.height = `${Math.round((n + 1) * rowH * scale())}px`;
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
