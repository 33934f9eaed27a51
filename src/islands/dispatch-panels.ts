/**
 * The dispatch visualizer's lists beside and under the scene: the event
 * list, the per-listener chart and figures, the workers table, and the flows
 * the last group change moved. Each draws what the scene (DispatchSim) holds;
 * none changes it.
 */
import type { DispatchEvent } from '../scene/dispatch/events';
import { NO_LISTENER } from '../model/index';
import { fmtRatio } from '../render/dispatch/chart';
import { fairness } from '../scene/dispatch/stats';
import type { DispatchCtx } from './dispatch-dom';
import { renderTextTable } from '../render/table';
import { EventRows, drawFigures, drawWorkerRows } from '../render/dispatch/tables';

/** Moved flows listed under the scene (all of them are ringed in it). */
const MOVED_LIST = 100;
/** Workers listed in the workers table in slot order (stalled and slowed ones are always listed too). */
const WORKER_ROWS = 64;

/** The lists' drawing functions. */
export function dispatchPanels({ el, t, sim, dom, s }: DispatchCtx) {
  const { tbody, workersCaption, workersBody, chart, figures, remapLine, movedBox, movedBody } = dom;
  /** The moved flows: ringed in the scene; here a short list (the first {@link MOVED_LIST} of them, in a scrolled box). */
  const showRemap = () => {
    const r = sim.lastRemap;
    remapLine.text(r ? t.remap(r, sim.rows.length) : '');
    movedBox.property('hidden', !r || r.moved.length === 0);
    movedBody.selectAll('*').remove();
    if (!r?.moved.length) return;
    const name = (l: number) => (l === NO_LISTENER ? t.none : `L${l}`);
    renderTextTable(movedBody, {
      caption: t.movedCaption(r.moved.length, MOVED_LIST),
      head: t.movedHead,
      rows: r.moved.slice(0, MOVED_LIST).map((ci, k) => [`${sim.clients[ci]!.saddr}:${sim.clients[ci]!.sport}`, name(r.from[k]!), name(r.to[k]!)]),
      className: 'rl-table rl-dv-moved-table',
    });
  };

  const eventCells = (e: DispatchEvent) => [
    `${e.t.toFixed(3)}`,
    e.kind,
    `${e.tuple.saddr}:${e.tuple.sport}`,
    String(e.cpu),
    e.listener === null ? t.none : `L${e.listener}`,
    e.slot === null ? '—' : String(e.slot),
    e.hashHex ? `0x${e.hashHex}` : '—',
    e.replay ? `${t.what(e.what)}${t.replayCheck(e.replay)}` : t.what(e.what),
  ];

  // The event list reuses its row elements (row i shows the i-th event of the window), and holds
  // still while keyboard focus is inside it during playback: a rebuilt row under the focus sent
  // focus back to <body>.
  const rowEls = new EventRows(tbody, 12, 8);
  const focusInList = () => {
    const a = (el.getRootNode() as ShadowRoot | Document).activeElement;
    return !!a && tbody.node()!.contains(a);
  };
  const drawTable = (force = false) => {
    if (s.playing && !force && focusInList()) return;
    const cur = sim.log.cursor;
    const end = s.playing || cur < 0 ? sim.log.nextSeq - 1 : Math.min(sim.log.nextSeq - 1, cur + 4);
    const rows = sim.log.window(end, rowEls.length);
    rowEls.show(
      Array.from({ length: rowEls.length }, (_, i) => {
        const e = rows[i];
        return e && { label: String(e.seq), inspect: t.inspectEvent(e.seq), chosen: e.seq === cur && !s.playing, cells: eventCells(e) };
      }),
    );
  };

  /** Rows of the workers table: the first {@link WORKER_ROWS} in slot order, then every stalled or slowed one. */
  const drawWorkers = () => {
    const shown = s.struct.rows.filter((r, i) => i < WORKER_ROWS || r.stalled || r.tag !== '');
    workersCaption.text(t.workersCaption(shown.length, s.struct.rows.length));
    drawWorkerRows(
      workersBody,
      shown.map((d) => ({
        key: String(d.listener),
        stalled: d.stalled,
        cells: [
          d.label,
          t.rateOf(sim.worker(d.listener)),
          String(sim.counts[d.listener] ?? 0),
          String(Math.floor(sim.accepted[d.listener] ?? 0)),
          String(Math.floor(sim.queue[d.listener] ?? 0)),
        ],
      })),
      5,
    );
  };
  const drawSide = () => {
    const bars = s.struct.rows.map((r) => ({ label: r.label, count: sim.counts[r.listener] ?? 0, colour: r.colour, hollow: r.fill === 'hollow' }));
    const fr = fairness(bars.map((b) => b.count));
    chart.draw(bars, fr, t.chartLabel, t.notApplicable);
    let longest: { label: string; queue: number } | null = null;
    for (const r of s.struct.rows) {
      const q = Math.floor(sim.queue[r.listener] ?? 0);
      if (q > 0 && (!longest || q > longest.queue)) longest = { label: r.label, queue: q };
    }
    drawWorkers();
    const items = t.figures(fr, sim.dropped, sim.closedCounts, sim.particles.inFlight(sim.time), fmtRatio(fr.maxMinRatio, t.notApplicable), longest);
    drawFigures(figures, items);
  };

  return { drawTable, drawSide, showRemap };
}
