/**
 * The dispatch visualizer's guided tour: a box of words above the scene and
 * a highlight over the part each step is about, following one SYN (or
 * datagram) from the client to its listener's accept queue. The last step
 * stalls that listener's worker (resumed when the tour closes).
 */
import type { DispatchEvent } from '../scene/dispatch/events';
import { TOUR_STEP_IDS, tourSpot, type TourStep } from '../scene/dispatch/tour';
import { tourFacts } from './dispatch-text';
import type { DispatchCtx } from './dispatch-dom';

/** What the tour asks of the rest of the widget. */
export interface TourHooks {
  /** The widget's outer element (Escape closes the tour anywhere in it). */
  root: HTMLElement;
  setPlaying: (p: boolean) => void;
  inspect: (seq: number) => void;
  focusedEvent: () => DispatchEvent | undefined;
  /** Whether the event went through the reuseport selection. */
  selected: (e: DispatchEvent) => boolean;
  stallButtonsFit: () => boolean;
  /** Redraws after the tour changes the scene. */
  refreshStructure: () => void;
  drawTable: (force?: boolean) => void;
  drawSide: () => void;
  describe: () => void;
}

/** The tour, wired to its buttons; closed at first. */
export function dispatchTour({ t, sim, dom, s, reduced, on }: DispatchCtx, h: TourHooks) {
  const { tourBox, tourCount, tourText, tourBack, tourNext, tourClose, tourBtn, spot } = dom;
  const { root, setPlaying, inspect, focusedEvent, selected, stallButtonsFit, refreshStructure, drawTable, drawSide, describe } = h;
  // ---- The guided tour -------------------------------------------------------------------------
  /** The step shown (index into TOUR_STEP_IDS), or null when the tour is closed. */
  let tourAt: number | null = null;
  let tourWasPlaying = false;
  /** The SYN (or datagram) the tour talks about. */
  let tourSeq: number | null = null;
  /** The listener whose worker the tour stalled (resumed when the tour closes). */
  let tourStalled: number | null = null;
  const tourEvent = () => (tourSeq === null ? undefined : sim.log.get(tourSeq));
  /** The stalled worker the last step is about: the tour's listener if stalled, else the first stalled one. */
  const stalledListener = (): number | null => {
    const l = tourEvent()?.listener;
    if (l != null && sim.rows.includes(l) && sim.worker(l).stalled) return l;
    return sim.rows.find((r) => sim.worker(r).stalled) ?? null;
  };
  const placeSpot = () => {
    if (tourAt === null) {
      spot.property('hidden', true);
      return;
    }
    const step = TOUR_STEP_IDS[tourAt]!;
    const l = tourEvent()?.listener;
    const st = stalledListener();
    const r = tourSpot(step, {
      box: s.box,
      width: s.cssW,
      rows: s.struct.rows.length,
      row: l == null ? -1 : sim.rowOf(l),
      stalledRow: st === null ? -1 : sim.rowOf(st),
      stallButtons: stallButtonsFit(),
      reservoir: s.struct.selection !== 'group',
    });
    spot
      .property('hidden', false)
      .attr('data-part', step)
      .style('left', `${r.x}px`)
      .style('top', `${r.y}px`)
      .style('width', `${r.w}px`)
      .style('height', `${r.h}px`);
  };
  /** Brings the tour's words and the highlighted part into view together when they are not (a phone has room for both below the top bar). */
  const revealTour = () => {
    const tb = tourBox.node() as HTMLElement;
    const sp = spot.node() as HTMLElement;
    if (typeof tb.scrollIntoView !== 'function') return;
    const behavior: ScrollBehavior = reduced ? 'auto' : 'instant';
    const seen = (n: HTMLElement) => {
      const r = n.getBoundingClientRect();
      return r.top >= 0 && r.bottom <= innerHeight;
    };
    if (seen(tb) && seen(sp)) return;
    tb.scrollIntoView({ block: 'start', behavior });
    if (!seen(sp)) sp.scrollIntoView({ block: 'nearest', behavior });
  };
  const showTour = () => {
    if (tourAt === null) return;
    const step: TourStep = TOUR_STEP_IDS[tourAt]!;
    const st = stalledListener();
    const facts = tourFacts(sim, tourEvent(), st, tourStalled !== null && st === tourStalled);
    const says = { title: t.tourStepTitle(step, facts), text: t.tourSays(step, facts) };
    tourCount.text(t.tourStep(tourAt + 1, TOUR_STEP_IDS.length));
    tourBox.attr('data-step', step);
    tourText.selectAll('*').remove();
    tourText.append('p').attr('class', 'rl-dv-tour-title').text(says.title);
    tourText.append('p').text(says.text);
    tourBack.attr('aria-disabled', String(tourAt === 0));
    tourNext.text(tourAt === TOUR_STEP_IDS.length - 1 ? t.tourDone : t.tourNext);
    placeSpot();
  };
  /** Goes to step `i`: the last step stalls the chosen listener's worker (when none is stalled) and runs the scene on a few seconds so its queue grows. */
  const goTour = (i: number) => {
    tourAt = Math.max(0, Math.min(TOUR_STEP_IDS.length - 1, i));
    if (TOUR_STEP_IDS[tourAt] === 'stalled' && stalledListener() === null) {
      const l = tourEvent()?.listener;
      if (l != null && sim.rows.includes(l)) {
        sim.setStalled(l, true);
        tourStalled = l;
        for (let k = 0; k < 80; k++) sim.advance(0.1, true);
        refreshStructure();
        drawTable(true);
        drawSide();
        describe();
      }
    }
    showTour();
    revealTour();
  };
  const openTour = () => {
    tourWasPlaying = s.playing;
    if (s.playing) setPlaying(false);
    s.lesson = null;
    // A SYN (or datagram) to talk about: the focused one, else the newest in the list, else the next ones.
    let e = focusedEvent();
    if (!e || !selected(e) || !e.explain) {
      const last = sim.log.last();
      e = last
        ? sim.log
            .window(last.seq, 60)
            .reverse()
            .find((x) => selected(x) && x.explain)
        : undefined;
    }
    for (let k = 0; k < 8 && (!e || !selected(e) || !e.explain); k++) e = sim.log.stepForward(() => sim.nextConnection()) ?? undefined;
    tourSeq = e?.seq ?? null;
    if (e) {
      s.focus = { seq: e.seq, start: performance.now() };
      inspect(e.seq);
      drawTable(true);
      drawSide();
    }
    tourBox.property('hidden', false);
    tourBtn.attr('aria-expanded', 'true');
    goTour(0);
    describe();
    (tourText.node() as HTMLElement).focus({ preventScroll: true });
  };
  /** Closes the tour: the box and the highlight go, a worker the tour stalled resumes, focus returns to the tour button. */
  const closeTour = (returnFocus = true) => {
    if (tourAt === null) return;
    tourAt = null;
    tourBox.property('hidden', true).attr('data-step', null);
    spot.property('hidden', true);
    tourBtn.attr('aria-expanded', 'false');
    if (tourStalled !== null && sim.worker(tourStalled).stalled) {
      sim.setStalled(tourStalled, false);
      refreshStructure();
      drawSide();
    }
    tourStalled = null;
    tourSeq = null;
    describe();
    if (returnFocus) (tourBtn.node() as HTMLElement).focus();
    if (returnFocus && tourWasPlaying && !reduced) setPlaying(true);
  };
  on(tourBtn.node()!, 'click', () => (tourAt === null ? openTour() : closeTour()));
  on(tourNext.node()!, 'click', () => {
    if (tourAt === null) return;
    if (tourAt >= TOUR_STEP_IDS.length - 1) closeTour();
    else goTour(tourAt + 1);
  });
  on(tourBack.node()!, 'click', () => {
    if (tourAt !== null && tourAt > 0) goTour(tourAt - 1);
  });
  on(tourClose.node()!, 'click', () => closeTour());
  on(root, 'keydown', (ev) => {
    if (ev.key === 'Escape' && tourAt !== null) {
      ev.preventDefault();
      closeTour();
    }
  });

  return {
    /** Whether the tour is open. */
    isOpen: () => tourAt !== null,
    /** Shows the step again (the scene changed under it). */
    show: showTour,
    /** Moves the highlight to where its part is now. */
    placeSpot,
    close: closeTour,
  };
}
