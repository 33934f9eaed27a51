/**
 * Draws the "Your server" scene (src/scene/server-view.ts): the verdict with
 * its evidence and links, the sockets table, per-worker bars against the
 * hashing band with their table as the text equivalent, and the queues over
 * time. Text only through textContent.
 */
import { select, type Selection } from 'd3';
import type { ServerView, TableView } from '../scene/server-view';
import { renderPasteBars } from './paste-bars';
import { renderLines } from './scenario-charts';
import { renderTextTable } from './table';

/** Headings of the sections, in the page's language. */
export interface ServerHeadings {
  verdict: string;
  evidence: string;
  readMore: string;
  sockets: string;
  workers: string;
  queues: string;
}

/** A table in a region that scrolls sideways on a narrow screen (focusable, so the keyboard scrolls it too). */
function scrollTable(parent: Selection<HTMLElement, unknown, null, undefined>, t: TableView): void {
  // The caption stands above the region, wrapping at the widget's width (a table caption is as wide as the table, and would scroll away).
  parent.append('p').attr('class', 'rl-hint rl-srv-caption').attr('aria-hidden', 'true').text(t.caption);
  const region = parent.append('div').attr('class', 'rl-srv-scroll').attr('tabindex', '0').attr('role', 'region').attr('aria-label', t.caption);
  renderTextTable(region, { ...t, className: 'rl-table rl-srv-table' });
  region.select('caption').attr('class', 'rl-sr-only');
}

/** Replaces `parent`'s content with the scene; `href` turns a link's site path into a URL. */
export function renderServer(parent: HTMLElement, v: ServerView, t: ServerHeadings, href: (path: string) => string): void {
  parent.replaceChildren();
  const root = select(parent);
  const verdict = root.append('section').attr('class', `rl-srv-verdict rl-srv-${v.verdict.kind}`).attr('data-verdict', v.verdict.kind);
  verdict.append('h2').text(t.verdict);
  verdict.append('p').attr('class', 'rl-srv-sentence').text(v.verdict.sentence);
  if (v.verdict.evidence.length) {
    verdict.append('h3').text(t.evidence);
    verdict
      .append('ul')
      .attr('class', 'rl-srv-evidence')
      .selectAll('li')
      .data(v.verdict.evidence)
      .join('li')
      .text((d) => d);
  }
  if (v.verdict.links.length) {
    const p = verdict.append('p').attr('class', 'rl-srv-links');
    p.append('span').text(`${t.readMore} `);
    v.verdict.links.forEach((l, i) => {
      if (i) p.append('span').text(' · ');
      p.append('a').attr('href', href(l.path)).text(l.label);
    });
  }
  if (v.workers) {
    const s = root.append('section').attr('class', 'rl-srv-workers');
    s.append('h2').text(t.workers);
    renderPasteBars(s.node()!, {
      counts: v.workers.counts,
      band: v.workers.band ?? undefined,
      label: v.workers.chartLabel,
      axis: v.workers.axis,
      labels: v.workers.labels,
    });
    scrollTable(s, v.workers.table);
  }
  if (v.sockets) {
    const s = root.append('section').attr('class', 'rl-srv-sockets');
    s.append('h2').text(t.sockets);
    scrollTable(s, v.sockets);
  }
  if (v.queues) {
    const s = root.append('section').attr('class', 'rl-srv-queues');
    s.append('h2').text(t.queues);
    renderLines(s.node()!, { series: v.queues.series.map((x) => x.queue), step: v.queues.stepMs / 1000, label: v.queues.label }, 640);
    s.append('p').attr('class', 'rl-hint').text(v.queues.note);
  }
}
