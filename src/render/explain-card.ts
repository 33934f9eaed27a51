/**
 * Renders an {@link ExplainView} as accessible HTML: headings, definition
 * lists and real tables. Text only through textContent.
 */
import { select, type Selection } from 'd3';
import type { ExplainView, Section } from '../scene/explain-view';
import { renderNotes, renderTextTable } from './table';
import { words, type Lang } from '../model/messages';

type Sel = Selection<HTMLElement, unknown, null, undefined>;

/** The card's own words. */
export interface ExplainCardText {
  kernel: (source: string) => string;
  fallback: (text: string) => string;
  caveats: string;
}

/** The card's words in `lang`, from the catalogue (`ui.card.*`). */
export function cardText(lang: Lang): ExplainCardText {
  const w = words(lang, 'card');
  return { kernel: (source) => w.say('kernel', { source }), fallback: (fallback) => w.say('fallback', { fallback }), caveats: w.say('caveats') };
}

const EN: ExplainCardText = cardText('en');

function renderSection(parent: Sel, s: Section, level: number, w: ExplainCardText): void {
  const sec = parent.append('section').attr('class', 'rl-section');
  sec.append(`h${level}`).text(s.title);
  if (s.source) sec.append('p').attr('class', 'rl-source').text(w.kernel(s.source));
  const dl = sec.append('dl');
  for (const r of s.rows) {
    dl.append('dt').text(r.label);
    dl.append('dd').classed('rl-mono', !!r.mono).text(r.value);
  }
  for (const t of s.tables) renderTextTable(sec, { ...t, chosen: (i) => i === t.highlight });
}

/** Appends the explanation to `el`; `level` is the heading level of its sections. */
export function renderExplain(el: HTMLElement, v: ExplainView, level = 3, w: ExplainCardText = EN): void {
  const root = select(el);
  root.append('p').attr('class', 'rl-headline').text(v.headline);
  for (const s of v.sections) renderSection(root, s, level, w);
  if (v.fallback) root.append('p').attr('class', 'rl-fallback').text(w.fallback(v.fallback));
  renderNotes(root, w.caveats, level, v.notes);
}
