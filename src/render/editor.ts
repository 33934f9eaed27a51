/**
 * The program editor's results: datagrams per socket (a bar beside each
 * count, the count itself as text) and one row per datagram, each with a
 * button that opens its lookup in the explain card. Text only through
 * textContent.
 */
import type { RouteRow } from '../scene/editor-view';
import { tableElement, type Cell } from './table';

/** The words of the results, in the page's language. */
export interface EditorRouteText {
  perSocket: string;
  perSocketHead: [string, string];
  socket: (n: number) => string;
  /** The row of datagrams no socket received. */
  none: string;
  routes: string;
  /** Line, from, payload, program returned, outcome, socket. */
  head: [string, string, string, string, string, string];
  payload: (hex: string, bytes: number) => string;
  returned: (r: RouteRow['returned']) => string;
  outcome: (o: RouteRow['outcome']) => string;
  /** The accessible name of a row's button. */
  show: (line: number) => string;
}

/** What the results show. */
export interface EditorRoutes {
  rows: readonly RouteRow[];
  perSocket: { counts: readonly number[]; dropped: number };
}

function bar(count: number, max: number): HTMLElement {
  const wrap = document.createElement('span');
  wrap.className = 'rl-ed-bar';
  const fill = wrap.appendChild(document.createElement('span'));
  fill.className = 'rl-ed-bar-fill';
  fill.style.width = `${max === 0 ? 0 : Math.round((100 * count) / max)}%`;
  wrap.setAttribute('aria-hidden', 'true');
  return wrap;
}

/** Replaces nothing: appends the two tables to `el`; `show(line)` is called when a row's button is pressed. */
export function renderEditorRoutes(el: HTMLElement, r: EditorRoutes, t: EditorRouteText, show: (line: number) => void): void {
  const { counts, dropped } = r.perSocket;
  const max = Math.max(dropped, ...counts);
  const countCell = (n: number): Cell => {
    const span = document.createElement('span');
    span.className = 'rl-ed-count';
    span.append(bar(n, max), document.createTextNode(String(n)));
    return span;
  };
  const sockRows: Cell[][] = counts.map((n, i) => [t.socket(i), countCell(n)]);
  if (dropped > 0) sockRows.push([t.none, countCell(dropped)]);
  const per = tableElement({ caption: t.perSocket, head: t.perSocketHead, rows: sockRows, rowHeads: true, className: 'rl-table rl-ed-per' });
  el.append(per);
  if (r.rows.length === 0) return;
  const rows: Cell[][] = r.rows.map((row) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'rl-ed-line';
    b.dataset.line = String(row.line);
    b.textContent = String(row.line);
    b.setAttribute('aria-label', t.show(row.line));
    b.setAttribute('aria-pressed', 'false');
    b.addEventListener('click', () => show(row.line));
    return [
      b,
      row.from,
      { text: t.payload(row.payload, row.payloadLength), className: 'rl-mono' },
      t.returned(row.returned),
      t.outcome(row.outcome),
      row.socket === null ? t.none : t.socket(row.socket),
    ];
  });
  // A region that scrolls sideways on a narrow screen; focusable, so the keyboard scrolls it too.
  const wrap = document.createElement('div');
  wrap.className = 'rl-ed-scroll';
  wrap.tabIndex = 0;
  wrap.setAttribute('role', 'region');
  wrap.setAttribute('aria-label', t.routes);
  wrap.append(
    tableElement({ caption: t.routes, head: t.head, rows, className: 'rl-table rl-ed-routes', data: (i) => ({ socket: String(r.rows[i]!.socket ?? 'none') }) }),
  );
  el.append(wrap);
}
