/**
 * The paste analyser's "what was read" section: the format found and why,
 * the line counts, which side is the server (with the button that flips it),
 * the CSV columns with a choice of role each, and the tables of lines that
 * could not be read or were read with a note (virtual tables, fed by the
 * worker on demand). The widget says what happens on a flip or a new column
 * role; this draws. Text only through textContent.
 */
import type { Lang } from '../model/messages';
import { say } from '../model/messages';
import type { Columns } from '../model/paste';
import type { BadLine, NotedLine, ReadSummary } from '../model/paste-protocol';
import { roleKey, roleOf } from '../scene/paste-view';
import { el } from './dom';
import { sayReason, type PasteText } from './paste-text';
import { tableElement } from './table';
import { renderVirtualTable, type VirtualTable } from './virtual-table';

/** What the read section shows, and where its tables' rows come from. */
export interface ReadSectionOptions {
  summary: ReadSummary;
  t: PasteText;
  lang: Lang;
  /** Whether the reader flipped the sides the model decided. */
  flipped: boolean;
  /** The reader asked for the other side as the server. */
  onFlip: () => void;
  /** The reader chose a new role for a CSV column: `columns` with it. */
  onColumns: (columns: Columns) => void;
  /** The lines not read, `start .. start + count`. */
  bad: (start: number, count: number) => Promise<BadLine[]>;
  /** The lines read with a note, `start .. start + count`. */
  notes: (start: number, count: number) => Promise<NotedLine[]>;
}

/** The section, and its virtual tables (the widget disposes them). */
export interface ReadSection {
  section: HTMLElement;
  bad?: VirtualTable;
  notes?: VirtualTable;
}

/** The read section: facts, the CSV columns, and the tables of bad and noted lines. */
export function renderReadSection(o: ReadSectionOptions): ReadSection {
  const { summary: s, t, lang } = o;
  const out: ReadSection = { section: el('section', { class: 'rl-paste-read' }) };
  const sec = out.section;
  sec.append(el('h2', {}, t.readTitle));
  const dl = el('dl', { class: 'rl-facts' });
  const fact = (k: string, v: string | Node) => dl.append(el('dt', {}, k), el('dd', {}, v));
  fact(t.formatFound, s.detected ? t.formatName(s.detected.format, s.detected.header) : t.formatNone);
  if (s.detected?.evidence && s.detected.evidence.sample > 0) sec.append(el('p', { class: 'rl-hint rl-paste-why' }, t.formatWhy(s.detected)));
  fact(
    t.linesRead,
    t.lineCounts(s, (kind) => say(lang, 'skip', { kind } as never)),
  );
  const flipBtn = el('button', { type: 'button' }, t.flip);
  flipBtn.addEventListener('click', () => o.onFlip());
  const side = el('span', {}, t.decision(s.decision, o.flipped), ' ');
  side.append(flipBtn);
  if (Object.keys(s.sides ?? {}).length) side.append(el('span', { class: 'rl-hint' }, ' ', t.sidesBy(s.sides)));
  fact(t.serverSide, side);
  if (s.listening) fact(t.listeningFound, s.listeningAddrs.join(', '));
  sec.append(dl);
  const cols = s.detected?.format === 'csv' ? (s.detected.columns as Columns | null) : null;
  if (cols) sec.append(renderColumns(cols, t, o.onColumns));
  if (s.partial) sec.append(el('p', { class: 'rl-warn' }, t.partial));
  if (s.cut) sec.append(el('p', { class: 'rl-warn' }, t.cut(s.cut)));
  if (s.bad + s.undecided > 0) {
    const det = el('details', { class: 'rl-paste-bad', open: s.rows === 0 });
    det.append(el('summary', {}, t.badTitle(s.bad + s.undecided)));
    const holder = el('div');
    det.append(holder);
    sec.append(det);
    out.bad = renderVirtualTable(holder, {
      caption: t.badTitle(s.bad + s.undecided),
      columns: t.badColumns,
      // The line's own text next to its number: after the reason, a long sentence, it sat scrolled out of view.
      rows: async (start, count) =>
        (await o.bad(start, count)).map((b: BadLine) => [
          String(b.line),
          b.text,
          sayReason(lang, t, b),
          // The format in the page's words ("地址对格式"), never its id ("pairs").
          b.format ? (t.formatWords[b.format] ?? b.format) : '–',
        ]),
      rowHeight: 30,
      // The reason is a sentence: it wraps, so the format column beside it stays in view.
      wrap: true,
    });
    out.bad.setCount(s.bad + s.undecided);
  }
  if (s.notes > 0) {
    const det = el('details', { class: 'rl-paste-notes', open: true });
    det.append(el('summary', {}, t.notesTitle(s.notes)));
    const holder = el('div');
    det.append(holder);
    sec.append(det);
    out.notes = renderVirtualTable(holder, {
      caption: t.notesTitle(s.notes),
      columns: t.notesColumns,
      rows: async (start, count) => (await o.notes(start, count)).map((x: NotedLine) => [String(x.line), say(lang, 'line_note', x.note)]),
      rowHeight: 30,
    });
    out.notes.setCount(s.notes);
  }
  return out;
}

/** The CSV columns as read, each with a choice of what it holds; a change calls `onColumns`. */
function renderColumns(cols: Columns, t: PasteText, onColumns: (columns: Columns) => void): HTMLElement {
  const box = el('details', { class: 'rl-paste-cols', open: true });
  box.append(el('summary', {}, t.columnsTitle(cols.header)));
  const rows = cols.columns.map((c, i) => {
    const sel = el('select');
    sel.setAttribute('aria-label', t.columnRole(c.name));
    for (const [key, label] of t.roles) sel.append(el('option', { value: key }, label));
    sel.value = roleKey(c.role);
    sel.addEventListener('change', () => {
      onColumns({ ...cols, columns: cols.columns.map((x, j) => (j === i ? { ...x, role: roleOf(sel.value) } : x)) });
    });
    return [c.name, sel];
  });
  box.append(tableElement({ head: t.columnsHead, rows }));
  return box;
}
