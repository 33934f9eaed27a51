/**
 * Renders a {@link LookupView} as accessible HTML: one real table per bucket
 * walked, a row per candidate socket (the receiving socket's row marked).
 * Text only through textContent; its words are the catalogue's
 * (`ui.lookup.*`, messages/*.json) in `lang`.
 */
import { select } from 'd3';
import type { LookupView } from '../../scene/dispatch/lookup';
import { sayUi, type Lang } from '../../model/messages';
import { renderNotes, renderTextTable } from '../table';

/** Appends the lookup to `el`; `level` is the heading level of its parts. */
export function renderLookup(el: HTMLElement, layoutText: string, v: LookupView, level: number, lang: Lang): void {
  const root = select(el);
  root.append('p').attr('class', 'rl-dv-lookup-layout').text(layoutText);
  root.append('p').attr('class', 'rl-headline rl-dv-lookup-head').text(v.headline);
  if (v.skLookup) root.append('p').text(sayUi(lang, 'lookup.sk_lookup', { outcome: v.skLookup }));
  const walks = root.append('div').attr('class', 'rl-dv-walks');
  v.walks.forEach((w, i) => {
    const sec = walks.append('section').attr('class', 'rl-dv-walk');
    sec.append(`h${level}`).text(sayUi(lang, 'lookup.table', { i: i + 1, caption: w.caption }));
    sec
      .append('p')
      .attr('class', 'rl-source')
      .text(sayUi(lang, 'lookup.source', { source: w.source, daddr: w.daddr }));
    renderTextTable(sec, {
      caption: sayUi(lang, 'lookup.candidates', { caption: w.caption }),
      head: w.head,
      rows: w.rows,
      chosen: (r) => w.highlight.includes(r),
      className: 'rl-table rl-dv-candidates',
    });
    if (!w.rows.length) sec.append('p').text(sayUi(lang, 'lookup.no_candidate'));
  });
  if (v.groupLine) root.append('p').attr('class', 'rl-dv-lookup-group').text(v.groupLine);
  root
    .append('p')
    .attr('class', 'rl-dv-lookup-reason')
    .text(sayUi(lang, 'lookup.why', { reason: v.reason }));
  renderNotes(root, sayUi(lang, 'lookup.refused'), level, v.refusals);
  renderNotes(root, sayUi(lang, 'lookup.caveats'), level, v.notes);
}
