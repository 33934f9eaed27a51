/**
 * The dispatch visualizer: clients send SYNs (or UDP datagrams) to one
 * SO_REUSEPORT group; each packet travels the path the model reports (hash
 * on the 32-bit range cut into N bands, the slot of socks[], the listener's
 * accept queue). Play, pause, step through the event list, change the
 * group, and inspect any packet's whole explain record.
 *
 * {@link DispatchWidget} is the widget; `mount(el, options)` returns its `dispose`; `<reuseport-dispatch>` is the same
 * widget as a custom element (attributes as in {@link DispatchOptions},
 * kebab-case).
 */
import { select, type Selection } from 'd3';
import { FrameClock } from '../clock';
import { defineIsland, emit, hostOf, islandElement, provideSettings } from './element';
import { loadModel, profiles } from '../model/index';
import { yieldToMain } from './dom';
import { pageLang } from './site';
import { renderExplain } from '../render/explain-card';
import type { Marker } from '../render/dispatch/overlay';
import { hitTest, px, py } from '../render/dispatch/particles';
import { StageCanvas, type QueueBar, type StageFrame } from '../render/dispatch/stage';
import { drawStalls, stallButtonsFit } from '../render/dispatch/stalls';
import { explainView } from '../scene/explain-view';
import type { DispatchEvent } from '../scene/dispatch/events';
import { COL, hashToY } from '../scene/dispatch/layout';
import { listenerMark } from '../scene/dispatch/palette';
import { hex32, parseHex32 } from '../scene/dispatch/rng';
import { DispatchSim, KIND_OF_CODE, newFrame, RefusedCall, type SimOptions } from '../scene/dispatch/sim';
import { sayRefusal, type Lang } from '../model/messages';
import { structure } from '../scene/dispatch/structure';
import { focusedPacket } from '../scene/dispatch/focus';
import { dispatchText, nowView, type DispatchText } from './dispatch-text';
import { RATE_BOUNDS } from '../scene/dispatch/workers';
import { buildDispatchDom, type DispatchCtx, type DispatchDom, type On, type ViewState } from './dispatch-dom';
import { LIMITS, readDispatch, refusedText, type DispatchOptions, type Preset, type Refused } from './dispatch-options';
import { embedSettings, fillPreset, readSettings, startOptions } from './dispatch-form';
import { dispatchPanels } from './dispatch-panels';
import { lookupPanel } from './dispatch-lookup';
import { fetchReplay, replayPanel } from './dispatch-replay';
import type { Replay } from '../scene/dispatch/replay';
import { dispatchTour } from './dispatch-tour';

export { LIMITS, readDispatch, type DispatchOptions } from './dispatch-options';

/** How far from a packet (CSS pixels) a click still picks it. */
const HIT_RADIUS = 12;
/**
 * The event table, the chart and the figures refresh once a second while
 * playing: each refresh lays out and repaints DOM, which costs whole frames
 * when rasterising without a GPU.
 */
const SLOW_MS = 1000;

/** Where the widget is in its life: built over several tasks, then running until disposed. */
type Phase = 'building' | 'running' | 'disposed';

/** The options a mount starts from, with the settings it refused when reading them. */
type MountOptions = DispatchOptions & { refused?: Refused[] };

/**
 * One dispatch visualizer on a page: the scene (one model Host stepped by
 * the controls' calls), its canvas and overlay, the lists and panels around
 * it, and the frame clock that moves it. Made by {@link DispatchWidget.mount};
 * {@link DispatchWidget.dispose} cancels its frames, observers and listeners.
 */
export class DispatchWidget {
  static #uid = 0;

  readonly #el: HTMLElement;
  readonly #options: MountOptions;
  readonly #lang: Lang;
  readonly #t: DispatchText;
  readonly #sim: DispatchSim;
  /** prefers-reduced-motion: the scene starts paused and plays in one-second steps. */
  readonly #reduced: boolean;
  readonly #root: Selection<HTMLDivElement, unknown, null, undefined>;
  readonly #dom: DispatchDom;
  /** What the panels and the tour share with the widget: the view state is one object, read by all. */
  readonly #s: ViewState;
  readonly #ctx: DispatchCtx;
  readonly #cleanups: (() => void)[] = [];
  readonly #stage: StageCanvas;
  readonly #frameBuf = newFrame(4096);
  readonly #one = newFrame(1);
  /** One bar per listener row, rewritten in place every frame (no allocation per frame at 1024 listeners). */
  readonly #queues: QueueBar[] = [];
  readonly #clock = new FrameClock();
  readonly #panels: ReturnType<typeof dispatchPanels>;
  readonly #lookup: ReturnType<typeof lookupPanel>;
  readonly #replay: ReturnType<typeof replayPanel>;
  readonly #tour: ReturnType<typeof dispatchTour>;

  #phase: Phase = 'building';
  /** Simulated seconds per wall-clock second. */
  #speed: number;
  #lastSlow = -Infinity;
  /** Seconds gathered towards the next one-second step (reduced motion). */
  #stepAcc = 0;
  #focusRoute: readonly number[] | null = null;
  /** The stage width and pixel ratio the scene was last sized for. */
  #sizedFor = '';
  #io: IntersectionObserver | null = null;
  #ro: ResizeObserver | null = null;

  /** Loads the model, reads the options (a replayed trace is fetched first), builds the widget under `el` and starts it. */
  static async mount(el: HTMLElement, options: MountOptions = {}): Promise<DispatchWidget> {
    await loadModel();
    const t = dispatchText(pageLang(el));
    const kernels = profiles().map((p) => `${p.release.major}.${p.release.minor}`);
    const { opts, refused } = startOptions(options, kernels);
    // "Your server, replayed": a trace of the site's, fetched before the scene is built from it.
    const errors = refused.map((r) => refusedText(t, r));
    if (options.replay) {
      try {
        opts.replay = await fetchReplay(options.replay, options.secret, t);
      } catch (e) {
        errors.push((e as Error).message);
      }
    }
    const sim = new DispatchSim(opts, options.logMax ?? 20000);
    // The first build is split into tasks (the group here; the elements; the scene; the panels), so none blocks input for long.
    await yieldToMain();
    const w = new DispatchWidget(el, options, sim, errors);
    await yieldToMain();
    await w.#start();
    return w;
  }

  private constructor(el: HTMLElement, options: MountOptions, sim: DispatchSim, errors: string[]) {
    this.#el = el;
    this.#options = options;
    this.#lang = pageLang(el);
    this.#t = dispatchText(this.#lang);
    this.#sim = sim;
    this.#reduced = typeof matchMedia === 'function' && matchMedia('(prefers-reduced-motion: reduce)').matches;
    this.#speed = options.speed ?? 1;
    const seq = ++DispatchWidget.#uid;
    const id = `rl-dv-${seq}`;
    this.#root = select(el)
      .append('div')
      .attr('class', options.compact ? 'rl-dv rl-dv-compact' : 'rl-dv')
      // Hidden while it builds over several tasks: a paint between them would show the scene growing, a layout shift.
      .style('visibility', 'hidden');
    const on: On = (node, type, fn) => {
      node.addEventListener(type, fn as EventListener);
      this.#cleanups.push(() => node.removeEventListener(type, fn as EventListener));
    };
    const t = this.#t;
    this.#dom = buildDispatchDom(this.#root, { t, f: (n: string) => `${id}-${n}`, seq, opts: sim.opts, speed: this.#speed, on });
    this.#speed = Number(this.#dom.speedSel.property('value'));
    this.#s = {
      playing: false,
      visible: true,
      lesson: null,
      inspected: null,
      focus: null,
      struct: structure(sim, t.structure),
      box: { left: 0, top: 0, width: 1, height: 1 },
      cssW: 0,
      cssH: 0,
    };
    this.#ctx = { el, lang: this.#lang, t, sim, dom: this.#dom, s: this.#s, reduced: this.#reduced, on };
    this.#stage = new StageCanvas(this.#dom.canvas.node()!);
    if (errors.length) {
      // The refusal sits in the Settings panel, beside the controls that take the values: open it.
      this.#setError(errors.join(' '));
      this.#dom.settingsBtn.attr('aria-expanded', 'true');
      this.#dom.settings.property('hidden', false);
    }
    this.#panels = dispatchPanels(this.#ctx);
    this.#lookup = lookupPanel(this.#ctx);
    this.#replay = replayPanel(
      this.#ctx,
      (r) => this.#startReplay(r),
      (m) => this.#setError(m),
    );
    this.#tour = dispatchTour(this.#ctx, {
      root: this.#root.node()!,
      setPlaying: (p) => this.#setPlaying(p),
      inspect: (seq) => this.#inspect(seq),
      focusedEvent: () => this.#focusedEvent(),
      selected,
      stallButtonsFit: () => this.#stallButtonsFit(),
      refreshStructure: () => this.#refreshStructure(),
      drawTable: (force) => this.#drawTable(force),
      drawSide: () => this.#drawSide(),
      describe: () => this.#describe(),
    });
    this.#listen(on);
    this.#clock.subscribe((now, dt) => this.#frame(now, dt));
  }

  /** Removes the widget: frames, observers, listeners, the model's memory. */
  dispose(): void {
    if (this.#phase === 'disposed') return;
    this.#phase = 'disposed';
    this.#clock.stop();
    this.#io?.disconnect();
    this.#ro?.disconnect();
    for (const c of this.#cleanups) c();
    this.#lookup.dispose();
    this.#sim.dispose();
    delete (hostOf(this.#el) as HTMLElement & { __dispatch?: unknown }).__dispatch;
    this.#root.remove();
  }

  /** Observes the stage, draws the first frame, shows the widget and starts the clock. */
  async #start(): Promise<void> {
    const stage = this.#dom.stage.node()!;
    if (typeof IntersectionObserver === 'function') {
      this.#io = new IntersectionObserver((entries) => {
        this.#s.visible = entries.some((e) => e.isIntersecting);
        this.#clock.setVisible(this.#s.visible);
        this.#describe();
      });
      this.#clock.setVisible(false); // until the observer's first report
      this.#io.observe(stage);
    }
    // The observer reports once at the start, at the size just drawn: only a new size redraws.
    if (typeof ResizeObserver === 'function') {
      this.#ro = new ResizeObserver(() => {
        if (this.#sizeKey() !== this.#sizedFor) this.#resize();
      });
      this.#ro.observe(stage);
    }
    // The structure is drawn once, by refreshStructure, at the size resize set.
    this.#resize(false);
    this.#refreshStructure();
    this.#dom.overlay.marker(this.#markerFor(), this.#s.box);
    this.#tour.placeSpot();
    // Playing or paused sets the sentence above the scene (and fills the event list), before the scene shows.
    this.#setPlaying(!this.#reduced && (this.#options.autoplay ?? true));
    await yieldToMain();
    if (this.#phase === 'disposed') return;
    this.#drawSide();
    this.#root.style('visibility', null);
    this.#phase = 'running';
    this.#clock.start();
    this.#provide();
  }

  // ---- The lists beside and under the scene ------------------------------------------------------

  /**
   * A compact widget hides the event list and the side panel (display: none), so they are not drawn: on the front
   * page that work was most of each second's longest frame.
   */
  #drawTable(force?: boolean): void {
    if (!this.#options.compact) this.#panels.drawTable(force);
  }

  #drawSide(): void {
    if (!this.#options.compact) this.#panels.drawSide();
  }

  #setError(msg: string): void {
    this.#dom.errors.text(msg);
  }

  /** An error in words: a call the kernel refused with its errno and rule, else the error's own sentence. */
  #errorText(e: unknown): string {
    const t = this.#t;
    return e instanceof RefusedCall ? t.callRefused(e.call.call, e.refusal.errno, sayRefusal(this.#lang, e.refusal)) : (e as Error).message;
  }

  #describe(): void {
    const s = this.#s;
    const paused = s.playing && !s.visible;
    this.#dom.now.text(s.lesson ?? this.#t.now(nowView(this.#sim, s.playing, paused)));
    this.#dom.summary.text(this.#t.summary(this.#sim));
    this.#replay?.show();
  }

  // ---- The scene's structure, and the workers' stall toggles --------------------------------------

  #refreshStructure(): void {
    const s = this.#s;
    s.struct = structure(this.#sim, this.#t.structure);
    this.#dom.overlay.draw(s.struct, s.box, s.cssW, s.cssH);
    this.#dom.overlay.slide(null, s.box, s.struct.rows.length);
    this.#dom.closeSel
      .selectAll('option')
      .data(this.#sim.rows)
      .join('option')
      .attr('value', (d) => String(d))
      .text((d) => `L${d}`);
    this.#drawStalls();
    this.#showWorkerSetting();
  }

  /** Whether the scene has room for a stall button beside each listener (else the Settings panel has the toggle). */
  #stallButtonsFit(): boolean {
    return stallButtonsFit(this.#s.struct.rows.length, this.#s.box);
  }

  #drawStalls(): void {
    drawStalls(this.#dom.stalls, this.#s.struct.rows, this.#s.box, (label) => this.#t.stallWorker(label));
  }

  /** Toggles listener `l`'s worker between stalled and working. */
  #toggleStall(l: number): void {
    const sim = this.#sim;
    if (!sim.rows.includes(l)) return;
    sim.setStalled(l, !sim.worker(l).stalled);
    this.#refreshStructure();
    this.#drawSide();
    this.#describe();
    if (this.#tour.isOpen()) this.#tour.show();
  }

  /** The Settings panel's worker controls follow the listener chosen there. */
  #showWorkerSetting(): void {
    const sim = this.#sim;
    const l = Number(this.#dom.closeSel.property('value'));
    const w = sim.rows.includes(l) ? sim.worker(l) : { rate: 1, stalled: false };
    this.#dom.srateIn.property('value', String(w.rate));
    this.#dom.stallSetBtn.attr('aria-pressed', String(w.stalled)).text(w.stalled ? this.#t.resumeToggle : this.#t.stallToggle);
  }

  // ---- Size, focus and the inspector -----------------------------------------------------------------

  /** The stage width and pixel ratio, which set the scene's size; a ResizeObserver report at the size last drawn redraws nothing. */
  #sizeKey(): string {
    return `${this.#dom.stage.node()!.clientWidth}@${globalThis.devicePixelRatio || 1}`;
  }

  /** Sizes the canvas to the stage; `draw: false` leaves the structure to the caller, who draws it next. */
  #resize(draw = true): void {
    const s = this.#s;
    const node = this.#dom.stage.node()!;
    this.#sizedFor = this.#sizeKey();
    const w = Math.max(280, node.clientWidth);
    // Taller than wide-screen proportions on a phone, so the rows keep room for their labels.
    const h = Math.max(300, Math.min(520, Math.round(w * (w < 600 ? 0.95 : 0.55))));
    s.cssW = w;
    s.cssH = h;
    this.#stage.resize(w, h, Math.min(2, globalThis.devicePixelRatio || 1));
    s.box = { left: 12, top: 44, width: w * 0.86, height: h - 56 };
    if (!draw) return;
    this.#dom.overlay.draw(s.struct, s.box, w, h);
    this.#dom.overlay.marker(this.#markerFor(), s.box);
    this.#drawStalls();
    this.#tour.placeSpot();
  }

  /** The event the marker and the line under the scene are about: the inspected one, else the cursor (paused) or the newest (playing). */
  #focusedEvent(): DispatchEvent | undefined {
    const s = this.#s;
    const log = this.#sim.log;
    const seq = s.inspected ?? (s.playing ? log.last()?.seq : log.cursor);
    if (seq === undefined || seq === null || seq < 0) return undefined;
    return log.get(seq);
  }

  #markerFor(): Marker | null {
    const e = this.#focusedEvent();
    if (!e || e.hash === null || !selected(e)) return null;
    return { y: hashToY(e.hash), text: `0x${e.hashHex}` };
  }

  /** The marker's formula: the group's record, or (no group picked: the reservoir era) the hash and the scan's pick. */
  #formula(e: DispatchEvent): string | null {
    const t = this.#t;
    return e.explain ? t.marker(e.explain) : e.hashHex !== null ? t.chainMarker(e.hashHex, e.listener, this.#sim.rows.length) : null;
  }

  #showFocused(): void {
    const t = this.#t;
    this.#dom.overlay.marker(this.#markerFor(), this.#s.box);
    const e = this.#focusedEvent();
    const f = e && selected(e) ? this.#formula(e) : null;
    this.#dom.stageLine.text(!e ? '' : f !== null ? t.stageLine(e, f) : t.stageLineUnselected(e));
  }

  #inspect(seq: number): void {
    const { inspBody } = this.#dom;
    const t = this.#t;
    const e = this.#sim.log.get(seq);
    if (!e) return;
    this.#s.inspected = seq;
    this.#sim.log.seek(seq);
    inspBody.selectAll('*').remove();
    const m = listenerMark(e.listener);
    inspBody.append('p').attr('class', 'rl-headline').text(t.headline(e, m.label));
    if (!selected(e)) inspBody.append('p').text(t.belongsTo(e));
    if (e.explain) renderExplain(inspBody.append('div').node()!, explainView(e.explain, this.#lang), 3, t.card);
    else if (e.listener !== null) {
      // No group picked (3.9–4.5 keep none): the record is the lookup's walk of the listening chain.
      inspBody.append('p').text(t.chainRecord);
      this.#lookup.renderWalk(inspBody.append('div').node()!, e.seq);
    } else inspBody.append('p').text(t.notDelivered);
    this.#lookup.setInspectorLine(inspBody.append('p').attr('class', 'rl-dv-insp-lookup').node());
    this.#showFocused();
    this.#lookup.show();
    emit(this.#el, 'stepped', { seq: e.seq, listener: e.listener, kind: e.kind });
  }

  // ---- Playback ---------------------------------------------------------------------------------

  #setPlaying(p: boolean): void {
    const s = this.#s;
    const sim = this.#sim;
    const was = s.playing;
    s.playing = p;
    this.#dom.playBtn.text(p ? this.#t.pause : this.#t.play).attr('aria-pressed', String(p));
    if (!p) {
      const last = sim.log.last();
      if (last && sim.log.cursor < 0) sim.log.seek(last.seq);
    } else {
      s.focus = null;
      s.inspected = null;
      if (!was)
        emit(this.#el, 'started', {
          kernel: sim.opts.kernel,
          proto: sim.opts.proto,
          listeners: sim.rows.length,
          clients: sim.clients.length,
          rate: sim.opts.rate,
          speed: this.#speed,
        });
    }
    this.#describe();
    this.#showFocused();
    this.#drawTable(true);
  }

  #step(dir: 1 | -1): void {
    const s = this.#s;
    const sim = this.#sim;
    s.lesson = null;
    if (s.playing) this.#setPlaying(false);
    const e = dir === 1 ? sim.log.stepForward(() => sim.nextConnection()) : sim.log.stepBack();
    if (!e) return;
    s.focus = { seq: e.seq, start: performance.now() };
    this.#inspect(e.seq);
    this.#drawTable(true);
    this.#drawSide();
    this.#describe();
    this.#dom.now.text(this.#t.step(e));
  }

  /** Pauses and opens event `seq`'s record (a row's button, a click on a packet). */
  #pick(seq: number, focus: boolean): void {
    if (this.#s.playing) this.#setPlaying(false);
    if (focus) this.#s.focus = { seq, start: performance.now() };
    this.#inspect(seq);
    this.#drawTable(true);
  }

  // ---- Settings: the form, restarts, replays, the live changes and presets -----------------------

  /** Reads the settings form into options; undefined (with the error shown) when a field is wrong. */
  #readForm(): SimOptions | undefined {
    const r = readSettings(this.#dom, this.#t, this.#sim.opts);
    if ('error' in r) this.#setError(r.error);
    return 'options' in r ? r.options : undefined;
  }

  /** Builds the scene from `next`; when the model cannot (a refused program), builds it back from the options before and says why. */
  #rebuildWith(next: SimOptions): boolean {
    const sim = this.#sim;
    const prev = sim.opts;
    sim.opts = next;
    try {
      sim.rebuild();
      return true;
    } catch (e) {
      sim.opts = prev;
      sim.rebuild();
      this.#setError(this.#t.cannotBuild(this.#errorText(e)));
      return false;
    }
  }

  /** Clears the error and the lesson, and closes the tour: the start of every restart and replay. */
  #beginRestart(): void {
    if (this.#tour.isOpen()) this.#tour.close(false);
    this.#setError('');
    this.#s.lesson = null;
  }

  #restart(): boolean {
    this.#beginRestart();
    const next = this.#readForm();
    if (!next) return false;
    const ok = this.#rebuildWith(next);
    this.#afterRestart();
    return ok;
  }

  /** The widget after the scene was built again: nothing inspected, the lists and the structure redrawn. */
  #afterRestart(): void {
    this.#sim.boot = 0;
    this.#s.inspected = null;
    this.#s.focus = null;
    this.#lookup.reset();
    this.#refreshStructure();
    this.#drawTable(true);
    this.#drawSide();
    this.#panels.showRemap();
    this.#showFocused();
    this.#describe();
  }

  /** Replays `r` (null: stops replaying); the Settings form then shows the trace's kernel, protocol, group and key. */
  #startReplay(r: Replay | null): void {
    const { kernelSel, protoSel, listenersIn, secretIn } = this.#dom;
    const sim = this.#sim;
    this.#beginRestart();
    this.#rebuildWith({ ...sim.opts, replay: r });
    kernelSel.property('value', sim.opts.kernel);
    protoSel.property('value', sim.opts.proto);
    listenersIn.property('value', String(sim.opts.listeners));
    secretIn.property('value', hex32(sim.opts.secret));
    this.#afterRestart();
  }

  /** A live change: `fn` makes it on the scene (its calls on the Host); the scene, the lookup and the lists follow. */
  #live(fn: () => void): () => void {
    return () => {
      this.#setError('');
      this.#s.lesson = null;
      try {
        fn();
      } catch (e) {
        this.#setError(this.#errorText(e));
      }
      if (this.#reduced) this.#sim.snapRows();
      this.#refreshStructure();
      this.#lookup.show();
      this.#panels.showRemap();
      this.#describe();
      this.#drawSide();
    };
  }

  /** The listener the Settings panel's select names. */
  #chosen(): number {
    return Number(this.#dom.closeSel.property('value'));
  }

  #closeListener(): void {
    this.#live(() => {
      const l = this.#chosen();
      if (!this.#sim.rows.includes(l)) throw new Error(this.#t.chooseMember);
      this.#sim.close(l, this.#reduced);
    })();
  }

  /** Sets the form to a preset's settings, restarts, then makes its change (if any) and plays. */
  #applyPreset(p: Preset): void {
    const { closeSel } = this.#dom;
    fillPreset(this.#dom, p);
    if (!this.#restart()) return;
    if (p.close !== undefined) {
      closeSel.property('value', String(p.close));
      this.#closeListener();
    }
    if (p.lookup) this.#lookup.open(p.lookup);
    if (!this.#reduced) this.#setPlaying(true);
    this.#s.lesson = this.#t.presetSays[p.id];
    this.#describe();
  }

  /** Sets the chosen listener's worker's service rate from the Settings field. */
  #setRate(): void {
    const t = this.#t;
    const l = this.#chosen();
    const v = Number(this.#dom.srateIn.property('value'));
    if (!(v >= RATE_BOUNDS.lo && v <= RATE_BOUNDS.hi)) {
      this.#setError(t.serviceRateBad);
      return;
    }
    if (!this.#sim.rows.includes(l)) return;
    this.#setError('');
    this.#sim.setRate(l, Math.round(v * 100) / 100);
    this.#refreshStructure();
    this.#drawSide();
    this.#describe();
  }

  /** Every control's listener. */
  #listen(on: On): void {
    const d = this.#dom;
    const t = this.#t;
    const sim = this.#sim;
    d.presetBtns.each((p, i, nodes) => on(nodes[i] as HTMLElement, 'click', () => this.#applyPreset(p)));
    // Workers: stall toggles in the scene and in Settings, service rates in Settings.
    on(d.stalls.node()!, 'click', (ev) => {
      const b = (ev.target as HTMLElement).closest<HTMLButtonElement>('button.rl-dv-stall');
      if (b) this.#toggleStall(Number(b.dataset.listener));
    });
    on(d.stallSetBtn.node()!, 'click', () => {
      this.#toggleStall(this.#chosen());
      this.#showWorkerSetting();
    });
    on(d.closeSel.node()!, 'change', () => this.#showWorkerSetting());
    on(d.setRateBtn.node()!, 'click', () => this.#setRate());
    on(d.settingsBtn.node()!, 'click', () => {
      const open = d.settingsBtn.attr('aria-expanded') !== 'true';
      d.settingsBtn.attr('aria-expanded', String(open));
      d.settings.property('hidden', !open);
      if (open) (d.settings.select('button').node() as HTMLElement | null)?.focus();
    });
    on(d.playBtn.node()!, 'click', () => this.#setPlaying(!this.#s.playing));
    on(d.backBtn.node()!, 'click', () => this.#step(-1));
    on(d.fwdBtn.node()!, 'click', () => this.#step(1));
    on(d.speedSel.node()!, 'change', () => {
      this.#speed = Number(d.speedSel.property('value'));
    });
    on(d.rateIn.node()!, 'change', () => {
      const v = Number(d.rateIn.property('value'));
      if (Number.isFinite(v) && v > 0 && v <= LIMITS.rate) {
        sim.opts.rate = v;
        this.#setError('');
      } else this.#setError(t.rateBad(LIMITS.rate));
    });
    on(d.restartBtn.node()!, 'click', () => void this.#restart());
    on(
      d.setSecretBtn.node()!,
      'click',
      this.#live(() => {
        const secret = parseHex32(String(d.secretIn.property('value')));
        if (secret === undefined) throw new Error(t.secretBad);
        sim.setSecret(secret);
      }),
    );
    on(
      d.bootBtn.node()!,
      'click',
      this.#live(() => d.secretIn.property('value', hex32(sim.newBoot()))),
    );
    on(
      d.addBtn.node()!,
      'click',
      this.#live(() => void sim.join(this.#reduced)),
    );
    on(d.closeBtn.node()!, 'click', () => this.#closeListener());
    on(
      d.pinBtn.node()!,
      'click',
      this.#live(() => {
        const cpu = Number(d.cpuIn.property('value'));
        if (!Number.isInteger(cpu) || cpu < 0) throw new Error(t.cpuBad);
        sim.setIncomingCpu(this.#chosen(), cpu, this.#reduced);
      }),
    );
    on(
      d.unpinBtn.node()!,
      'click',
      this.#live(() => sim.setIncomingCpu(this.#chosen(), undefined, this.#reduced)),
    );
    on(d.tbody.node()!, 'click', (ev) => {
      const btn = (ev.target as HTMLElement).closest('button.rl-dv-rowbtn');
      if (btn) this.#pick(Number(btn.textContent), true);
    });
    on(d.canvas.node() as unknown as HTMLElement, 'click', (ev) => {
      const r = (d.canvas.node() as HTMLCanvasElement).getBoundingClientRect();
      const i = hitTest(this.#frameBuf, this.#s.box, ev.clientX - r.left, ev.clientY - r.top, HIT_RADIUS);
      if (i >= 0) this.#pick(this.#frameBuf.seq[i]!, false);
    });
  }

  // ---- Frames ----------------------------------------------------------------------------------

  /** One tick of the frame clock: the scene advances (while playing), the canvas redraws, the DOM once a second. */
  #frame(now: number, dt: number): void {
    const s = this.#s;
    const sim = this.#sim;
    const sec = dt / 1000;
    if (s.playing) {
      if (this.#reduced) {
        this.#stepAcc += sec;
        if (this.#stepAcc >= 1) {
          this.#stepAcc = 0;
          sim.advance(this.#speed, true);
        }
      } else sim.advance(sec * this.#speed);
    }
    sim.animateRows(this.#reduced ? Infinity : sec);
    this.#render(now);
    if (now - this.#lastSlow > SLOW_MS) {
      this.#lastSlow = now;
      if (s.playing) {
        this.#drawTable();
        this.#drawSide();
        this.#describe();
      }
      this.#showFocused();
    }
  }

  /** The focused packet on its route, `now` into its travel (stepping while paused), or null. */
  #focusOf(now: number): StageFrame['focus'] {
    const s = this.#s;
    return s.focus && !s.playing ? focusedPacket(this.#sim, s.focus, now, this.#reduced, this.#one) : null;
  }

  #render(now: number): void {
    const s = this.#s;
    const sim = this.#sim;
    sim.frame(this.#frameBuf);
    const rows = s.struct.rows;
    const queues = this.#queues;
    queues.length = rows.length;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      if (queues[i] === undefined) queues[i] = { y: 0, length: 0, stalled: false };
      const q = queues[i]!;
      q.y = sim.listenerY(r.listener);
      q.length = sim.queue[r.listener] ?? 0;
      q.stalled = r.stalled;
    }
    const focus = this.#focusOf(now);
    this.#focusRoute = focus ? focus.route : null;
    const moved = sim.lastRemap && sim.time - sim.lastRemap.t < 6 ? sim.lastRemap.moved : [];
    this.#stage.draw({
      box: s.box,
      cssW: s.cssW,
      clientListener: sim.clientListener,
      packets: this.#frameBuf,
      queues,
      moved,
      focus,
      inspected: s.playing === false ? s.inspected : null,
    });
    const sl = sim.slide;
    if (sl && sl.u < 1) {
      const row = s.struct.rows.find((r) => r.listener === sl.listener);
      if (row) this.#dom.overlay.slide({ row, from: sl.from, to: sl.to, u: sl.u }, s.box, s.struct.rows.length);
    } else this.#dom.overlay.slide(null, s.box, s.struct.rows.length);
  }

  /** "Embed this", and the handle tests and benchmarks read (the frame clock and the scene). */
  #provide(): void {
    const el = this.#el;
    const sim = this.#sim;
    const s = this.#s;
    const options = this.#options;
    // "Embed this" writes the group as it is set now (the program and a client list have no attribute).
    provideSettings(el, () => embedSettings(sim.opts, this.#speed, options));
    const buf = this.#frameBuf;
    (hostOf(el) as HTMLElement & { __dispatch?: unknown }).__dispatch = {
      clock: this.#clock,
      sim,
      /** Drawn packets in canvas CSS pixels. */
      packets: () =>
        Array.from({ length: buf.n }, (_, i) => ({
          x: px(s.box, buf.x[i]!),
          y: py(s.box, buf.y[i]!),
          seq: buf.seq[i]!,
          kind: KIND_OF_CODE[buf.kind[i]!],
          listener: buf.listener[i]!,
        })),
      /** Client i's mark in canvas CSS pixels. */
      clientAt: (i: number) => ({ x: px(s.box, COL.client), y: py(s.box, (i + 0.5) / Math.max(1, sim.clients.length)) }),
      /** The focused packet's route in canvas CSS pixels ([x, y] pairs), or null. */
      focusRoute: () => {
        const r = this.#focusRoute;
        return r ? Array.from({ length: r.length / 2 }, (_, i) => [px(s.box, r[2 * i]!), py(s.box, r[2 * i + 1]!)]) : null;
      },
      /** Column x positions in canvas CSS pixels. */
      columns: () => Object.fromEntries(Object.entries(COL).map(([k, v]) => [k, px(s.box, v)])),
    };
  }
}

/** Only a SYN or a datagram goes through the reuseport selection; an ACK or SYN-ACK shows no hash. */
function selected(e: DispatchEvent): boolean {
  return e.kind === 'SYN' || e.kind === 'UDP';
}

/** Mounts the visualizer into `el`; resolves to a function removing it (frames, observers, listeners). */
export async function mount(el: HTMLElement, options: MountOptions = {}): Promise<() => void> {
  const w = await DispatchWidget.mount(el, options);
  return () => w.dispose();
}

/** A setting that was refused when read: its name and value as given, and the rule it broke. */ /**
 * `<reuseport-dispatch kernel="6.18" proto="tcp" listeners="8" clients="200" rate="40" speed="1" seed="1"
 * secret="0x..." wildcard cpus="4" rates="1,1,0.5" autoplay="false" from-url>`; `from-url` lets the page's query
 * (?kernel=6.18&listeners=8&bind=wildcard…) override the attributes.
 */
export const ReuseportDispatchElement = islandElement(mount, readDispatch, [
  'kernel',
  'proto',
  'listeners',
  'clients',
  'rate',
  'speed',
  'seed',
  'secret',
  'wildcard',
  'cpus',
  'autoplay',
  'compact',
  'rates',
  'replay',
  'lang',
]);

/** Registers `<reuseport-dispatch>` once. */
export function defineDispatchElement(): void {
  defineIsland('reuseport-dispatch', ReuseportDispatchElement);
}
