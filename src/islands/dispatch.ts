/**
 * The dispatch visualizer: clients send SYNs (or UDP datagrams) to one
 * SO_REUSEPORT group; each packet travels the path the model reports (hash
 * on the 32-bit range cut into N bands, the slot of socks[], the listener's
 * accept queue). Play, pause, step through the event list, change the
 * group, and inspect any packet's whole explain record.
 *
 * `mount(el, options)` returns `dispose`; `<reuseport-dispatch>` is the same
 * widget as a custom element (attributes as in {@link DispatchOptions},
 * kebab-case).
 */
import { select } from 'd3';
import { FrameClock } from '../clock';
import { defineIsland, emit, hostOf, islandElement, provideSettings } from './element';
import { loadModel, NO_LISTENER, profiles, type Program, type Proto } from '../model/index';
import { yieldToMain } from './dom';
import { pageLang } from './site';
import { renderExplain } from '../render/explain-card';
import type { Marker } from '../render/dispatch/overlay';
import { hitTest, px, py } from '../render/dispatch/particles';
import { StageCanvas, type QueueBar, type StageFrame } from '../render/dispatch/stage';
import { explainView } from '../scene/explain-view';
import { parseClients } from '../scene/dispatch/clients';
import type { DispatchEvent } from '../scene/dispatch/events';
import { along, COL, hashToY } from '../scene/dispatch/layout';
import { KINDS, listenerMark } from '../scene/dispatch/palette';
import { bootSecret, hex32, parseHex32 } from '../scene/dispatch/rng';
import { DispatchSim, KIND_OF_CODE, newFrame, RefusedCall, type SimOptions } from '../scene/dispatch/sim';
import { sayRefusal } from '../model/messages';
import { structure, type RowView } from '../scene/dispatch/structure';
import { dispatchText, nowView } from './dispatch-text';
import { formatRates, RATE_BOUNDS } from '../scene/dispatch/workers';
import { ROW_PARTS } from '../scene/dispatch/tour';
import { buildDispatchDom, type DispatchCtx, type On, type ViewState } from './dispatch-dom';
import { LIMITS, PRESET_BASE, readDispatch, refusedText, type DispatchOptions, type Preset, type Refused } from './dispatch-options';
import { dispatchPanels } from './dispatch-panels';
import { lookupPanel } from './dispatch-lookup';
import { fetchReplay, replayPanel } from './dispatch-replay';
import type { Replay } from '../scene/dispatch/replay';
import { dispatchTour } from './dispatch-tour';

export { LIMITS, readDispatch, type DispatchOptions } from './dispatch-options';

let uid = 0;
/** How far from a packet (CSS pixels) a click still picks it. */
const HIT_RADIUS = 12;
/** Milliseconds the focused packet takes to travel its route when stepping. */
const FOCUS_MS = 900;

/** Mounts the visualizer into `el`; resolves to a function removing it (frames, observers, listeners). */
export async function mount(el: HTMLElement, options: DispatchOptions & { refused?: Refused[] } = {}): Promise<() => void> {
  await loadModel();
  const lang = pageLang(el);
  const t = dispatchText(lang);
  const refused = [...(options.refused ?? [])];
  const kernels = profiles().map((p) => `${p.release.major}.${p.release.minor}`);
  if (options.kernel !== undefined && !kernels.includes(options.kernel)) {
    refused.push({ name: 'kernel', value: options.kernel, rule: 'one-of', allowed: kernels });
    options = { ...options, kernel: undefined };
  }
  const seq = ++uid;
  const id = `rl-dv-${seq}`;
  const f = (n: string) => `${id}-${n}`;
  const reduced = typeof matchMedia === 'function' && matchMedia('(prefers-reduced-motion: reduce)').matches;
  const seed0 = (options.seed ?? 1) >>> 0;
  const opts: SimOptions = {
    kernel: options.kernel ?? '6.18',
    proto: options.proto ?? 'tcp',
    listeners: Math.min(LIMITS.listeners, options.listeners ?? 8),
    wildcard: options.wildcard ?? false,
    seed: seed0,
    secret: (options.secret ?? bootSecret(seed0, 0)) >>> 0,
    clients: Math.min(LIMITS.clients, options.clients ?? 200),
    rate: Math.min(LIMITS.rate, options.rate ?? 40),
    cpus: options.cpus ?? 4,
    program: null,
    clientList: null,
    rates: (options.rates ?? []).slice(0, LIMITS.listeners),
  };
  let speed = options.speed ?? 1;
  // "Your server, replayed": a trace of the site's, fetched before the scene is built from it.
  let replayError = '';
  if (options.replay) {
    try {
      opts.replay = await fetchReplay(options.replay, options.secret, t);
    } catch (e) {
      replayError = (e as Error).message;
    }
  }
  const sim = new DispatchSim(opts, options.logMax ?? 20000);
  // The first build is split into tasks (the group here; the elements; the scene; the panels), so none blocks input for long.
  await yieldToMain();

  const root = select(el)
    .append('div')
    .attr('class', options.compact ? 'rl-dv rl-dv-compact' : 'rl-dv')
    // Hidden while it builds over several tasks: a paint between them would show the scene growing, a layout shift.
    .style('visibility', 'hidden');
  const cleanups: (() => void)[] = [];
  const on: On = (node, type, fn) => {
    node.addEventListener(type, fn as EventListener);
    cleanups.push(() => node.removeEventListener(type, fn as EventListener));
  };

  const dom = buildDispatchDom(root, { t, f, seq, opts, speed, on });
  speed = Number(dom.speedSel.property('value'));
  const { playBtn, backBtn, fwdBtn, speedSel, settingsBtn, now, stage, canvas, overlay, stageLine, stalls, settings, errors, presetBtns } = dom;
  const { closeSel, closeBtn, addBtn, cpuIn, pinBtn, unpinBtn, srateIn, setRateBtn, stallSetBtn, secretIn, setSecretBtn, bootBtn } = dom;
  const { kernelSel, protoSel, bindSel, listenersIn, clientsIn, rateIn, cpusIn, progSel, progIdx, progMod, showProgramFields, seedIn, clientList } = dom;
  const { restartBtn, summary, tbody, inspBody } = dom;

  // ---- State -----------------------------------------------------------------------------------
  const s: ViewState = {
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
  const c: DispatchCtx = { el, lang, t, sim, dom, s, reduced, on };
  let lastSlow = -Infinity;
  let stepAcc = 0;
  const frameBuf = newFrame(4096);
  const one = newFrame(1);
  const stageCanvas = new StageCanvas(canvas.node()!);

  const setError = (msg: string) => errors.text(msg);
  if (refused.length || replayError) {
    // The refusal sits in the Settings panel, beside the controls that take the values: open it.
    setError([...refused.map((r) => refusedText(t, r)), replayError].filter(Boolean).join(' '));
    settingsBtn.attr('aria-expanded', 'true');
    settings.property('hidden', false);
  }
  const movedNow = (): readonly number[] => (sim.lastRemap && sim.time - sim.lastRemap.t < 6 ? sim.lastRemap.moved : []);

  const refreshStructure = () => {
    s.struct = structure(sim, t.structure);
    overlay.draw(s.struct, s.box, s.cssW, s.cssH);
    overlay.slide(null, s.box, s.struct.rows.length);
    closeSel
      .selectAll('option')
      .data(sim.rows)
      .join('option')
      .attr('value', (d) => String(d))
      .text((d) => `L${d}`);
    drawStalls();
    showWorkerSetting();
  };

  /** Whether the scene has room for a stall button beside each listener (else the Settings panel has the toggle). */
  const stallButtonsFit = () => s.struct.rows.length > 0 && s.struct.rows.length <= 32 && s.box.height / s.struct.rows.length >= 26;
  const drawStalls = () => {
    const fit = stallButtonsFit();
    const rh = s.box.height / Math.max(1, s.struct.rows.length);
    // At least 24 px square (WCAG 2.5.8), two pixels clear of the next row's.
    const size = Math.min(28, Math.max(24, rh - 4));
    const x = px(s.box, COL.listener) + ROW_PARTS.stall;
    stalls
      .selectAll<HTMLButtonElement, RowView>('button')
      .data(fit ? s.struct.rows : [], (d) => String(d.listener))
      .join((e) => {
        const b = e.append('button').attr('type', 'button').attr('class', 'rl-dv-stall');
        b.append('span').attr('class', 'rl-dv-stall-icon').attr('aria-hidden', 'true');
        return b;
      })
      .attr('data-listener', (d) => d.listener)
      .attr('aria-label', (d) => t.stallWorker(d.label))
      .attr('title', (d) => t.stallWorker(d.label))
      .attr('aria-pressed', (d) => String(d.stalled))
      .style('left', `${x}px`)
      .style('top', (d) => `${py(s.box, d.y) - size / 2}px`)
      .style('width', '28px')
      .style('height', `${size}px`);
  };
  /** Toggles listener `l`'s worker between stalled and working. */
  const toggleStall = (l: number) => {
    if (!sim.rows.includes(l)) return;
    sim.setStalled(l, !sim.worker(l).stalled);
    refreshStructure();
    drawSide();
    describe();
    if (tour.isOpen()) tour.show();
  };
  /** The Settings panel's worker controls follow the listener chosen there. */
  const showWorkerSetting = () => {
    const l = Number(closeSel.property('value'));
    const w = sim.rows.includes(l) ? sim.worker(l) : { rate: 1, stalled: false };
    srateIn.property('value', String(w.rate));
    stallSetBtn.attr('aria-pressed', String(w.stalled)).text(w.stalled ? t.resumeToggle : t.stallToggle);
  };

  const describe = () => {
    const paused = s.playing && !s.visible;
    now.text(s.lesson ?? t.now(nowView(sim, s.playing, paused)));
    summary.text(t.summary(sim));
    replay?.show();
  };

  // ---- The lists beside and under the scene, and the Listener lookup panel -----------------------
  const panels = dispatchPanels(c);
  // A compact widget hides the event list and the side panel (display: none), so they are not drawn: on the front
  // page that work was most of each second's longest frame.
  const drawTable: typeof panels.drawTable = options.compact ? () => {} : panels.drawTable;
  const drawSide: typeof panels.drawSide = options.compact ? () => {} : panels.drawSide;
  const { showRemap } = panels;
  const lookup = lookupPanel(c);
  // Declared before describe() first runs; set once the panel's elements exist (below).
  let replay: ReturnType<typeof replayPanel> | null = null;

  /** The stage width and pixel ratio, which set the scene's size; a ResizeObserver report at the size last drawn redraws nothing. */
  const sizeKey = () => `${stage.node()!.clientWidth}@${globalThis.devicePixelRatio || 1}`;
  let sizedFor = '';
  /** Sizes the canvas to the stage; `draw: false` leaves the structure to the caller, who draws it next. */
  const resize = (draw = true) => {
    const node = stage.node()!;
    sizedFor = sizeKey();
    const w = Math.max(280, node.clientWidth);
    // Taller than wide-screen proportions on a phone, so the rows keep room for their labels.
    const h = Math.max(300, Math.min(520, Math.round(w * (w < 600 ? 0.95 : 0.55))));
    s.cssW = w;
    s.cssH = h;
    stageCanvas.resize(w, h, Math.min(2, globalThis.devicePixelRatio || 1));
    s.box = { left: 12, top: 44, width: w * 0.86, height: h - 56 };
    if (!draw) return;
    overlay.draw(s.struct, s.box, w, h);
    overlay.marker(markerFor(), s.box);
    drawStalls();
    tour.placeSpot();
  };

  /** The event the marker and the line under the scene are about: the inspected one, else the cursor (paused) or the newest (playing). */
  const focusedEvent = (): DispatchEvent | undefined => {
    const seq = s.inspected ?? (s.playing ? sim.log.last()?.seq : sim.log.cursor);
    if (seq === undefined || seq === null || seq < 0) return undefined;
    return sim.log.get(seq);
  };
  /** Only a SYN or a datagram goes through the reuseport selection; an ACK or SYN-ACK shows no hash. */
  const selected = (e: DispatchEvent) => e.kind === 'SYN' || e.kind === 'UDP';
  const markerFor = (): Marker | null => {
    const e = focusedEvent();
    if (!e || e.hash === null || !selected(e)) return null;
    return { y: hashToY(e.hash), text: `0x${e.hashHex}` };
  };
  /** The marker's formula: the group's record, or (no group picked: the reservoir era) the hash and the scan's pick. */
  const formula = (e: DispatchEvent): string | null =>
    e.explain ? t.marker(e.explain) : e.hashHex !== null ? t.chainMarker(e.hashHex, e.listener, sim.rows.length) : null;
  const showFocused = () => {
    overlay.marker(markerFor(), s.box);
    const e = focusedEvent();
    const f = e && selected(e) ? formula(e) : null;
    stageLine.text(!e ? '' : f !== null ? t.stageLine(e, f) : t.stageLineUnselected(e));
  };

  const inspect = (seq: number) => {
    const e = sim.log.get(seq);
    if (!e) return;
    s.inspected = seq;
    sim.log.seek(seq);
    inspBody.selectAll('*').remove();
    const m = listenerMark(e.listener);
    inspBody.append('p').attr('class', 'rl-headline').text(t.headline(e, m.label));
    if (!selected(e)) inspBody.append('p').text(t.belongsTo(e));
    if (e.explain) renderExplain(inspBody.append('div').node()!, explainView(e.explain, lang), 3, t.card);
    else if (e.listener !== null) {
      // No group picked (3.9–4.5 keep none): the record is the lookup's walk of the listening chain.
      inspBody.append('p').text(t.chainRecord);
      lookup.renderWalk(inspBody.append('div').node()!, e.seq);
    } else inspBody.append('p').text(t.notDelivered);
    lookup.setInspectorLine(inspBody.append('p').attr('class', 'rl-dv-insp-lookup').node());
    showFocused();
    lookup.show();
    emit(el, 'stepped', { seq: e.seq, listener: e.listener, kind: e.kind });
  };

  const setPlaying = (p: boolean) => {
    const was = s.playing;
    s.playing = p;
    playBtn.text(p ? t.pause : t.play).attr('aria-pressed', String(p));
    if (!p) {
      const last = sim.log.last();
      if (last && sim.log.cursor < 0) sim.log.seek(last.seq);
    } else {
      s.focus = null;
      s.inspected = null;
      if (!was)
        emit(el, 'started', {
          kernel: sim.opts.kernel,
          proto: sim.opts.proto,
          listeners: sim.rows.length,
          clients: sim.clients.length,
          rate: sim.opts.rate,
          speed,
        });
    }
    describe();
    showFocused();
    drawTable(true);
  };

  const step = (dir: 1 | -1) => {
    s.lesson = null;
    if (s.playing) setPlaying(false);
    const e = dir === 1 ? sim.log.stepForward(() => sim.nextConnection()) : sim.log.stepBack();
    if (!e) return;
    s.focus = { seq: e.seq, start: performance.now() };
    inspect(e.seq);
    drawTable(true);
    drawSide();
    describe();
    now.text(t.step(e));
  };

  /** Reads the settings form into options; undefined (with the error shown) when a field is wrong. */
  const readForm = (): SimOptions | undefined => {
    const num = (input: typeof rateIn, lo: number, hi: number, name: string): number | undefined => {
      const v = Number(input.property('value'));
      if (!Number.isInteger(v) || v < lo || v > hi) {
        setError(t.wholeNumber(name, lo, hi));
        return undefined;
      }
      return v;
    };
    const listeners = num(listenersIn, 1, LIMITS.listeners, t.listeners);
    const clients = num(clientsIn, 1, LIMITS.clients, t.clients);
    const cpus = num(cpusIn, 1, 64, t.cpus);
    const seed = num(seedIn, 0, 4294967295, t.seed);
    const rate = num(rateIn, 1, LIMITS.rate, t.rate);
    const secret = parseHex32(String(secretIn.property('value')));
    if (listeners === undefined || clients === undefined || cpus === undefined || seed === undefined || rate === undefined) return undefined;
    if (secret === undefined) {
      setError(t.secretBad);
      return undefined;
    }
    const prog = String(progSel.property('value'));
    let program: Program | null = null;
    if (prog === 'cpu') program = { kind: 'cpu' };
    if (prog === 'index') {
      const idx = num(progIdx, 0, 65535, t.fixedIndexName);
      if (idx === undefined) return undefined;
      program = { kind: 'index', index: idx };
    }
    if (prog === 'payload_mod') {
      const m = num(progMod, 1, 4294967295, t.payloadModulusName);
      if (m === undefined) return undefined;
      program = { kind: 'payload_mod', modulus: m };
    }
    if (prog === 'pass') program = { kind: 'pass' };
    if (prog === 'drop') program = { kind: 'drop' };
    let clientListParsed = null;
    const text = String(clientList.property('value'));
    if (text.trim()) {
      const r = parseClients(text, cpus, seed, LIMITS.clients);
      if (r.tooMany) {
        setError(t.tooManyClients(r.tooMany.line, r.tooMany.max));
        return undefined;
      }
      if (r.errors.length) {
        setError(t.clientListErrors(r.errors.slice(0, 5)));
        return undefined;
      }
      if (!r.clients.length) {
        setError(t.noClient);
        return undefined;
      }
      clientListParsed = r.clients;
    }
    return {
      ...sim.opts,
      kernel: String(kernelSel.property('value')),
      proto: protoSel.property('value') as Proto,
      wildcard: bindSel.property('value') === 'wildcard',
      listeners,
      clients,
      cpus,
      seed,
      secret,
      rate,
      program,
      clientList: clientListParsed,
    };
  };

  /** An error in words: a call the kernel refused with its errno and rule, else the error's own sentence. */
  const errorText = (e: unknown): string =>
    e instanceof RefusedCall ? t.callRefused(e.call.call, e.refusal.errno, sayRefusal(lang, e.refusal)) : (e as Error).message;

  /** Builds the scene from `next`; when the model cannot (a refused program), builds it back from the options before and says why. */
  const rebuildWith = (next: SimOptions): boolean => {
    const prev = sim.opts;
    sim.opts = next;
    try {
      sim.rebuild();
      return true;
    } catch (e) {
      sim.opts = prev;
      sim.rebuild();
      setError(t.cannotBuild(errorText(e)));
      return false;
    }
  };

  const restart = (): boolean => {
    if (tour.isOpen()) tour.close(false);
    setError('');
    s.lesson = null;
    const next = readForm();
    if (!next) return false;
    const ok = rebuildWith(next);
    afterRestart();
    return ok;
  };

  /** The widget after the scene was built again: nothing inspected, the lists and the structure redrawn. */
  const afterRestart = () => {
    sim.boot = 0;
    s.inspected = null;
    s.focus = null;
    lookup.reset();
    refreshStructure();
    drawTable(true);
    drawSide();
    showRemap();
    showFocused();
    describe();
  };

  /** Replays `r` (null: stops replaying); the Settings form then shows the trace's kernel, protocol, group and key. */
  const startReplay = (r: Replay | null) => {
    if (tour.isOpen()) tour.close(false);
    setError('');
    s.lesson = null;
    rebuildWith({ ...sim.opts, replay: r });
    kernelSel.property('value', sim.opts.kernel);
    protoSel.property('value', sim.opts.proto);
    listenersIn.property('value', String(sim.opts.listeners));
    secretIn.property('value', hex32(sim.opts.secret));
    afterRestart();
  };
  replay = replayPanel(c, startReplay, setError);

  const live = (fn: () => void) => () => {
    setError('');
    s.lesson = null;
    try {
      fn();
    } catch (e) {
      setError(errorText(e));
    }
    if (reduced) sim.snapRows();
    refreshStructure();
    lookup.show();
    showRemap();
    describe();
    drawSide();
  };
  const closeListener = live(() => {
    const l = Number(closeSel.property('value'));
    if (!sim.rows.includes(l)) throw new Error(t.chooseMember);
    sim.close(l, reduced);
  });

  /** Sets the form to a preset's settings, restarts, then makes its change (if any) and plays. */
  const applyPreset = (p: Preset) => {
    const o = { ...PRESET_BASE, ...p.options };
    kernelSel.property('value', o.kernel);
    protoSel.property('value', o.proto);
    bindSel.property('value', o.wildcard ? 'wildcard' : 'specific');
    listenersIn.property('value', String(o.listeners));
    clientsIn.property('value', String(o.clients));
    rateIn.property('value', String(o.rate));
    cpusIn.property('value', String(o.cpus));
    progSel.property('value', o.program);
    showProgramFields();
    clientList.property('value', '');
    if (!restart()) return;
    if (p.close !== undefined) {
      closeSel.property('value', String(p.close));
      closeListener();
    }
    if (p.lookup) {
      lookup.open(p.lookup);
    }
    if (!reduced) setPlaying(true);
    s.lesson = t.presetSays[p.id];
    describe();
  };
  presetBtns.each(function (d) {
    on(this as HTMLElement, 'click', () => applyPreset(d));
  });

  // ---- Workers: stall toggles in the scene and in Settings, service rates in Settings -----------------
  on(stalls.node()!, 'click', (ev) => {
    const b = (ev.target as HTMLElement).closest<HTMLButtonElement>('button.rl-dv-stall');
    if (b) toggleStall(Number(b.dataset.listener));
  });
  on(stallSetBtn.node()!, 'click', () => {
    toggleStall(Number(closeSel.property('value')));
    showWorkerSetting();
  });
  on(closeSel.node()!, 'change', showWorkerSetting);
  on(setRateBtn.node()!, 'click', () => {
    const l = Number(closeSel.property('value'));
    const v = Number(srateIn.property('value'));
    if (!(v >= RATE_BOUNDS.lo && v <= RATE_BOUNDS.hi)) {
      setError(t.serviceRateBad);
      return;
    }
    if (!sim.rows.includes(l)) return;
    setError('');
    sim.setRate(l, Math.round(v * 100) / 100);
    refreshStructure();
    drawSide();
    describe();
  });

  const tour = dispatchTour(c, {
    root: root.node()!,
    setPlaying,
    inspect,
    focusedEvent,
    selected,
    stallButtonsFit,
    refreshStructure,
    drawTable,
    drawSide,
    describe,
  });

  on(settingsBtn.node()!, 'click', () => {
    const open = settingsBtn.attr('aria-expanded') !== 'true';
    settingsBtn.attr('aria-expanded', String(open));
    settings.property('hidden', !open);
    if (open) (settings.select('button').node() as HTMLElement | null)?.focus();
  });
  on(playBtn.node()!, 'click', () => setPlaying(!s.playing));
  on(backBtn.node()!, 'click', () => step(-1));
  on(fwdBtn.node()!, 'click', () => step(1));
  on(speedSel.node()!, 'change', () => (speed = Number(speedSel.property('value'))));
  on(rateIn.node()!, 'change', () => {
    const v = Number(rateIn.property('value'));
    if (Number.isFinite(v) && v > 0 && v <= LIMITS.rate) {
      sim.opts.rate = v;
      setError('');
    } else setError(t.rateBad(LIMITS.rate));
  });
  on(restartBtn.node()!, 'click', () => void restart());
  on(
    setSecretBtn.node()!,
    'click',
    live(() => {
      const s = parseHex32(String(secretIn.property('value')));
      if (s === undefined) throw new Error(t.secretBad);
      sim.setSecret(s);
    }),
  );
  on(
    bootBtn.node()!,
    'click',
    live(() => {
      const s = sim.newBoot();
      secretIn.property('value', hex32(s));
    }),
  );
  on(
    addBtn.node()!,
    'click',
    live(() => void sim.join(reduced)),
  );
  on(closeBtn.node()!, 'click', closeListener);
  on(
    pinBtn.node()!,
    'click',
    live(() => {
      const c = Number(cpuIn.property('value'));
      if (!Number.isInteger(c) || c < 0) throw new Error(t.cpuBad);
      sim.setIncomingCpu(Number(closeSel.property('value')), c, reduced);
    }),
  );
  on(
    unpinBtn.node()!,
    'click',
    live(() => sim.setIncomingCpu(Number(closeSel.property('value')), undefined, reduced)),
  );
  on(tbody.node()!, 'click', (ev) => {
    const btn = (ev.target as HTMLElement).closest('button.rl-dv-rowbtn');
    if (!btn) return;
    const seq = Number(btn.textContent);
    if (s.playing) setPlaying(false);
    s.focus = { seq, start: performance.now() };
    inspect(seq);
    drawTable(true);
  });
  on(canvas.node() as unknown as HTMLElement, 'click', (ev) => {
    const r = (canvas.node() as HTMLCanvasElement).getBoundingClientRect();
    const i = hitTest(frameBuf, s.box, ev.clientX - r.left, ev.clientY - r.top, HIT_RADIUS);
    if (i < 0) return;
    const seq = frameBuf.seq[i]!;
    if (s.playing) setPlaying(false);
    inspect(seq);
    drawTable(true);
  });

  // ---- Frames ----------------------------------------------------------------------------------
  const clock = new FrameClock();
  // The event table, the chart and the figures refresh once a second while
  // playing: each refresh lays out and repaints DOM, which costs whole frames
  // when rasterising without a GPU.
  const SLOW_MS = 1000;
  let focusRoute: readonly number[] | null = null;
  /** The focused packet on its route, `now` into its travel (stepping while paused), or null. */
  const focusOf = (now: number): StageFrame['focus'] => {
    if (!s.focus || s.playing) return null;
    const e = sim.log.get(s.focus.seq);
    if (!e) return null;
    const route = sim.path(e.kind, e.client, e.hash === null ? 0.5 : hashToY(e.hash), e.listener ?? NO_LISTENER);
    const u = reduced ? 1 : Math.min(1, (now - s.focus.start) / FOCUS_MS);
    const p = { x: 0, y: 0 };
    along(route.pts, route.w, u, p);
    one.n = 1;
    one.x[0] = p.x;
    one.y[0] = p.y;
    one.kind[0] = KINDS.indexOf(e.kind);
    one.listener[0] = e.listener ?? NO_LISTENER;
    one.seq[0] = e.seq;
    return { route: route.pts, packet: one, seq: e.seq };
  };
  // One bar per listener row, rewritten in place every frame (no allocation per frame at 1024 listeners).
  const queues: QueueBar[] = [];
  const render = (now: number) => {
    sim.frame(frameBuf);
    const rows = s.struct.rows;
    queues.length = rows.length;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      if (queues[i] === undefined) queues[i] = { y: 0, length: 0, stalled: false };
      const q = queues[i]!;
      q.y = sim.listenerY(r.listener);
      q.length = sim.queue[r.listener] ?? 0;
      q.stalled = r.stalled;
    }
    const focus = focusOf(now);
    focusRoute = focus ? focus.route : null;
    stageCanvas.draw({
      box: s.box,
      cssW: s.cssW,
      clientListener: sim.clientListener,
      packets: frameBuf,
      queues,
      moved: movedNow(),
      focus,
      inspected: s.playing === false ? s.inspected : null,
    });
    const sl = sim.slide;
    if (sl && sl.u < 1) {
      const row = s.struct.rows.find((r) => r.listener === sl.listener);
      if (row) overlay.slide({ row, from: sl.from, to: sl.to, u: sl.u }, s.box, s.struct.rows.length);
    } else overlay.slide(null, s.box, s.struct.rows.length);
  };
  clock.subscribe((now, dt) => {
    const sec = dt / 1000;
    if (s.playing) {
      if (reduced) {
        stepAcc += sec;
        if (stepAcc >= 1) {
          stepAcc = 0;
          sim.advance(speed, true);
        }
      } else sim.advance(sec * speed);
    }
    sim.animateRows(reduced ? Infinity : sec);
    render(now);
    if (now - lastSlow > SLOW_MS) {
      lastSlow = now;
      if (s.playing) {
        drawTable();
        drawSide();
        describe();
      }
      showFocused();
    }
  });

  await yieldToMain();
  const io =
    typeof IntersectionObserver === 'function'
      ? new IntersectionObserver((entries) => {
          s.visible = entries.some((e) => e.isIntersecting);
          clock.setVisible(s.visible);
          describe();
        })
      : null;
  if (io) {
    clock.setVisible(false); // until the observer's first report
    io.observe(stage.node()!);
  }
  // The observer reports once at the start, at the size just drawn: only a new size redraws.
  const ro =
    typeof ResizeObserver === 'function'
      ? new ResizeObserver(() => {
          if (sizeKey() !== sizedFor) resize();
        })
      : null;
  ro?.observe(stage.node()!);

  // The structure is drawn once, by refreshStructure, at the size resize set.
  resize(false);
  refreshStructure();
  overlay.marker(markerFor(), s.box);
  tour.placeSpot();
  // Playing or paused sets the sentence above the scene (and fills the event list), before the scene shows.
  setPlaying(!reduced && (options.autoplay ?? true));
  await yieldToMain();
  drawSide();
  root.style('visibility', null);
  clock.start();
  // "Embed this" writes the group as it is set now (the program and a client list have no attribute).
  provideSettings(el, () => {
    const o = sim.opts;
    const out: Record<string, string | boolean> = {
      kernel: o.kernel,
      proto: o.proto,
      listeners: String(o.listeners),
      clients: String(o.clients),
      rate: String(o.rate),
      speed: String(speed),
      seed: String(o.seed),
      secret: hex32(o.secret),
      cpus: String(o.cpus),
      wildcard: o.wildcard,
    };
    const rates = formatRates(o.rates ?? []);
    if (rates) out.rates = rates;
    if (options.compact) out.compact = true;
    if (options.autoplay === false) out.autoplay = 'false';
    return out;
  });
  // For tests and benchmarks: the frame clock and the scene.
  (hostOf(el) as HTMLElement & { __dispatch?: unknown }).__dispatch = {
    clock,
    sim,
    /** Drawn packets in canvas CSS pixels. */
    packets: () =>
      Array.from({ length: frameBuf.n }, (_, i) => ({
        x: px(s.box, frameBuf.x[i]!),
        y: py(s.box, frameBuf.y[i]!),
        seq: frameBuf.seq[i]!,
        kind: KIND_OF_CODE[frameBuf.kind[i]!],
        listener: frameBuf.listener[i]!,
      })),
    /** Client i's mark in canvas CSS pixels. */
    clientAt: (i: number) => ({ x: px(s.box, COL.client), y: py(s.box, (i + 0.5) / Math.max(1, sim.clients.length)) }),
    /** The focused packet's route in canvas CSS pixels ([x, y] pairs), or null. */
    focusRoute: () =>
      focusRoute ? Array.from({ length: focusRoute.length / 2 }, (_, i) => [px(s.box, focusRoute![2 * i]!), py(s.box, focusRoute![2 * i + 1]!)]) : null,
    /** Column x positions in canvas CSS pixels. */
    columns: () => Object.fromEntries(Object.entries(COL).map(([k, v]) => [k, px(s.box, v)])),
  };

  return () => {
    clock.stop();
    io?.disconnect();
    ro?.disconnect();
    for (const c of cleanups) c();
    lookup.dispose();
    sim.dispose();
    delete (hostOf(el) as HTMLElement & { __dispatch?: unknown }).__dispatch;
    root.remove();
  };
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
