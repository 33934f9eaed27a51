/**
 * The paste analyser's answers as sections: the secret-free simulation's
 * spread, the bars of what each listener (or socket) receives with its table,
 * a pasted layout's sockets, and the rows (a virtual table with its filter
 * and an Explain button per row). The widget asks the worker; these draw
 * what it answered, from the facts of scene/paste-view.ts. Text only through
 * textContent.
 */
import { say, sayRefusal, type Lang } from '../model/messages';
import type { SpreadAnswer } from '../model/paste';
import type { BadLine, LayoutAnswered, ReadSummary, Row } from '../model/paste-protocol';
import { countFacts, socketFacts } from '../scene/paste-view';
import { el, field } from './dom';
import { renderPasteBars } from './paste-bars';
import { sayReason, type PasteText } from './paste-text';
import { tableElement } from './table';
import { renderVirtualTable, type VirtualTable } from './virtual-table';

/** A number as the page's locale writes it, with at most `digits` decimals (∞ when not finite). */
function fmt(n: number, digits = 2): string {
  if (!Number.isFinite(n)) return '∞';
  return n.toLocaleString(undefined, { maximumFractionDigits: digits });
}

/**
 * The secret-free simulation's section: the spread of the skew over random
 * boots, the observed counts against it, and other group sizes. `pending`:
 * the simulation is still to come.
 */
export function spreadSection(t: PasteText, lang: Lang, spread: SpreadAnswer | undefined, pending: boolean): HTMLElement {
  const sec = el('section', { class: 'rl-paste-spread' });
  sec.append(el('h2', {}, t.spreadTitle));
  if (!spread) {
    sec.append(el('p', {}, pending ? t.spreadPending : t.noRows));
    return sec;
  }
  const s = spread.spread;
  sec.append(el('p', {}, t.spreadLead(s)));
  const dl = el('dl', { class: 'rl-facts' });
  const num = (v: number | null) => (v === null ? '∞' : fmt(v));
  const range = (m: { mean: number | null; p5: number | null; p95: number | null }, pct = false) =>
    pct ? `${fmt(m.mean! * 100, 1)} % (${fmt(m.p5! * 100, 1)}–${fmt(m.p95! * 100, 1)} %)` : `${num(m.mean)} (${num(m.p5)}–${num(m.p95)})`;
  dl.append(el('dt', {}, t.maxMin), el('dd', {}, range(s.maxMin), s.maxMin.unbounded > 0 ? ` ${t.unbounded(s.maxMin.unbounded)}` : ''));
  dl.append(el('dt', {}, t.jain), el('dd', {}, `${fmt(s.jain.mean, 4)} (${fmt(s.jain.p5, 4)}–${fmt(s.jain.p95, 4)})`));
  dl.append(el('dt', {}, t.emptyShare), el('dd', {}, range(s.emptyShare, true)));
  dl.append(el('dt', {}, t.maxShare), el('dd', {}, range(s.maxShare, true)));
  if (s.exchangeable) dl.append(el('dt', {}, t.oneListener), el('dd', {}, t.bandLine(s.band)));
  sec.append(dl);
  if (spread.compareError) sec.append(el('p', { class: 'rl-warn' }, spread.compareError));
  if (spread.comparison)
    sec.append(el('p', { class: 'rl-verdict' }, say(lang, 'verdict', spread.comparison.verdict)), el('p', {}, t.observedSkew(spread.comparison)));
  const rows = spread.byListeners.rows;
  sec.append(
    tableElement({
      caption: t.byListenersTitle,
      head: t.byListenersHead,
      rows: rows.map((r) => [
        String(r.listeners) + (r.yours ? ` ${t.yours}` : ''),
        `${num(r.maxMin.p50)} / ${num(r.maxMin.p95)}`,
        `${fmt(r.emptyShare.mean * 100, 1)} %`,
      ]),
      chosen: (i) => !!rows[i]?.yours,
    }),
  );
  return sec;
}

/** What the bars show and where their counts come from. */
export interface BarsSectionOptions {
  t: PasteText;
  lang: Lang;
  /** The counts drawn, or null when there are none to draw. */
  counts: number[] | null;
  /** Whose counts: a layout's sockets, the listeners under the secret, the observed or the typed counts. */
  source: 'sockets' | 'secret' | 'observed' | 'typed';
  /** The secret in force, said (for `sockets` and `secret`). */
  secret: string;
  /** Rows whose line names another protocol than the group's: how many, and the first one's refusal. */
  mismatch: { count: number; reason: BadLine['reason']; format: string | null } | null;
  spread: SpreadAnswer | undefined;
}

/** The bars of what each listener (or socket) receives, with each one's range over random boots in a table. */
export function barsSection(o: BarsSectionOptions): HTMLElement {
  const { t, counts, spread } = o;
  const bySocket = o.source === 'sockets';
  const sec = el('section', { class: 'rl-paste-bars' });
  sec.append(el('h2', {}, bySocket ? t.barsTitleSockets : t.barsTitle));
  if (o.mismatch) {
    const why = sayReason(o.lang, t, { line: 0, format: o.mismatch.format, group: 'line_error', reason: o.mismatch.reason, text: '' } as BadLine);
    sec.append(el('p', { class: 'rl-warn' }, t.mismatched(o.mismatch.count, why)));
  }
  if (!counts) {
    sec.append(el('p', {}, t.barsNeedSecret(spread ? t.spreadTitle : null)));
    return sec;
  }
  const which = { sockets: t.barsSockets(o.secret), secret: t.barsUnder(o.secret), observed: t.barsObserved, typed: t.barsTyped }[o.source];
  sec.append(el('p', {}, which));
  const band = !bySocket && spread?.spread.exchangeable ? spread.spread.band : undefined;
  if (spread && !spread.spread.exchangeable) sec.append(el('p', { class: 'rl-hint' }, t.notExchangeable));
  renderPasteBars(sec, { counts, band, label: t.barsLabel(counts, band), axis: bySocket ? t.socketAxis : t.listenerAxis });
  const det = el('details');
  det.append(el('summary', {}, t.countsTable));
  const place = { below: t.below, above: t.above, within: t.within };
  const rows = countFacts(counts, band, spread).map((f) => [
    String(f.listener),
    f.count.toLocaleString(),
    f.range ? `${place[f.range.place]} (${f.range.p5.toLocaleString()}–${f.range.p95.toLocaleString()})` : '–',
  ]);
  det.append(tableElement({ head: t.countsHead, rows }));
  sec.append(det);
  return sec;
}

/** The layout's sockets: each one's bind and listen answers, and what it receives. */
export function socketsSection(a: LayoutAnswered, summary: ReadSummary, t: PasteText, lang: Lang): HTMLElement {
  const sec = el('section', { class: 'rl-paste-sockets' });
  sec.append(el('h2', {}, t.socketsTitle));
  sec.append(el('p', {}, t.socketsLead(a.sockets, a.unrouted, summary.rows)));
  const call = (x: LayoutAnswered['results'][number]['bind']) => (x ? `${x.errno}: ${sayRefusal(lang, x)}` : t.callOk);
  const rows = socketFacts(a).map((s) => [
    String(s.socket),
    s.where,
    call(s.bind),
    s.listen === undefined ? '–' : call(s.listen),
    s.member === null ? '–' : t.groupMember(s.member.group, s.member.member),
    s.count === null ? '–' : s.count.toLocaleString(),
  ]);
  sec.append(tableElement({ caption: t.socketsCaption, head: t.socketsHead, rows }));
  return sec;
}

/** What the rows section shows, and what the reader's filter and Explain buttons do. */
export interface RowsSectionOptions {
  t: PasteText;
  summary: ReadSummary | undefined;
  /** Whether the rows are answered under a secret now (each row names its listener). */
  answered: () => boolean;
  /** Whether the rows go to a layout's sockets (the listener column names a socket). */
  sockets: boolean;
  /** The filter in force. */
  filter: { listener: number | null; query: string };
  /** The ids of the search and listener fields. */
  ids: { query: string; listener: string };
  /** Where an explained row's card goes, under the table. */
  explainBox: HTMLElement;
  /** The rows shown, `start .. start + count`. */
  rows: (start: number, count: number) => Promise<Row[]>;
  /** The reader typed in the filter: the search text and the listener field as typed. */
  onFilter: (query: string, listener: string) => void;
  /** The reader asked for row `i` shown to be explained. */
  onExplain: (i: number) => void;
}

/** The rows section: its table, and the count shown above it. */
export interface RowsSection {
  section: HTMLElement;
  table?: VirtualTable;
  /** Shows `n` rows of `of` (after a filter). */
  shown?: (n: number, of: number) => void;
}

/** The rows, with the filter above them and an Explain button in each. */
export function rowsSection(o: RowsSectionOptions): RowsSection {
  const { t, summary } = o;
  const sec = el('section', { class: 'rl-paste-rows' });
  sec.append(el('h2', {}, t.rowsTitle));
  if (!summary || summary.rows === 0) {
    sec.append(el('p', {}, t.noRows));
    return { section: sec };
  }
  if (!o.answered()) sec.append(el('p', { class: 'rl-hint' }, t.rowsNeedSecret));
  const bar = el('div', { class: 'rl-paste-filter' });
  const q = el('input', { type: 'search', value: o.filter.query, placeholder: t.searchPlaceholder });
  const lf = el('input', { type: 'number', min: '0', value: o.filter.listener === null ? '' : String(o.filter.listener) });
  bar.append(field(o.ids.query, t.search, q), field(o.ids.listener, t.filterListener, lf, t.filterListenerHint));
  sec.append(bar);
  const count = el('p', { class: 'rl-hint' });
  count.setAttribute('aria-live', 'polite');
  sec.append(count);
  const holder = el('div');
  sec.append(holder, o.explainBox);
  const table = renderVirtualTable(holder, {
    caption: t.rowsTitle,
    columns: o.sockets ? t.rowColumnsSockets : t.rowColumns,
    rows: async (start, n) =>
      (await o.rows(start, n)).map((r: Row) => [
        String(r.line),
        r.client,
        r.server,
        r.listener === null ? (o.answered() ? t.none : '–') : String(r.listener),
        r.observed === null ? '–' : String(r.observed),
      ]),
    action: { text: t.explain, label: (_i, c) => t.explainRow(c[0]!), run: (i) => o.onExplain(i) },
  });
  const changed = () => o.onFilter(q.value, lf.value);
  q.addEventListener('input', changed);
  lf.addEventListener('input', changed);
  const shown = (n: number, of: number) => {
    count.textContent = t.shown(n, of);
    table.setCount(n);
  };
  return { section: sec, table, shown };
}

/** Puts an explained row in `box`: its heading (focused, so a keyboard reader lands on it) and the card `draw` fills. */
export function explainedRow(box: HTMLElement, title: string, draw: (card: HTMLElement) => void): void {
  const h = el('h3', { tabIndex: -1 }, title);
  const card = el('div');
  box.append(h, card);
  draw(card);
  h.focus();
}
