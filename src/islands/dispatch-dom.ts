/**
 * The dispatch visualizer's page structure: the playback bar, the tour box,
 * the scene's stage, the Settings form, the per-listener side panel, the
 * event list, the inspector and the Listener lookup panel. Built once by
 * `mount` (dispatch.ts), which wires it to the scene; nothing here reads the
 * model but the list of profiles for the kernel choice.
 */
import type { Selection } from 'd3';
import { profiles } from '../model/index';
import { Chart } from '../render/dispatch/chart';
import { Overlay } from '../render/dispatch/overlay';
import { renderTextTable } from '../render/table';
import { firstLinePast } from '../scene/dispatch/clients';
import { KIND_SHAPE, KINDS } from '../scene/dispatch/palette';
import { hex32 } from '../scene/dispatch/rng';
import type { SimOptions } from '../scene/dispatch/sim';
import { RATE_BOUNDS } from '../scene/dispatch/workers';
import type { DispatchText } from './dispatch-text';
import type { Lang } from '../model/messages';
import type { Box } from '../render/dispatch/particles';
import type { DispatchSim } from '../scene/dispatch/sim';
import type { Structure } from '../scene/dispatch/structure';
import { LIMITS, PRESETS, SPEEDS } from './dispatch-options';
import { PROTO_OPTIONS, selectOptions } from './dom';

// biome-ignore lint/suspicious/noExplicitAny: d3's Selection is generic in element and data; this helper serves any
type Sel = Selection<any, unknown, null, undefined>;

/** Adds a listener that the widget's dispose removes. */
export type On = <K extends keyof HTMLElementEventMap>(node: HTMLElement, type: K, fn: (ev: HTMLElementEventMap[K]) => void) => void;

/** What the page structure needs: the words, the widget's id maker and number, the starting options and speed. */
export interface DomInput {
  t: DispatchText;
  /** The id of part `n` of this widget. */
  f: (n: string) => string;
  /** This widget's number on the page (1 for the first). */
  seq: number;
  opts: SimOptions;
  speed: number;
  on: On;
}

/** Builds the visualizer's elements under `root`; returns the ones the widget reads or changes. */
export function buildDispatchDom(root: Sel, { t, f, seq, opts, speed, on }: DomInput) {
  // ---- First screen: playback, one sentence, the scene ------------------------------------------
  const field = (parent: Sel, name: string, label: string, hint?: string) => {
    const w = parent.append('div').attr('class', 'rl-field');
    w.append('label').attr('for', f(name)).text(label);
    if (hint)
      w.append('span')
        .attr('class', 'rl-dv-hint')
        .attr('id', f(`${name}-hint`))
        .text(hint);
    return w;
  };
  const bar = root.append('div').attr('class', 'rl-dv-bar').attr('role', 'group').attr('aria-label', t.controls(seq));
  const playBtn = bar.append('button').attr('type', 'button').attr('class', 'rl-primary').attr('aria-pressed', 'false').text(t.play);
  const backBtn = bar.append('button').attr('type', 'button').text(t.stepBack);
  const fwdBtn = bar.append('button').attr('type', 'button').text(t.stepForward);
  const speedWrap = bar.append('div').attr('class', 'rl-dv-inline');
  speedWrap.append('label').attr('for', f('speed')).text(t.speed);
  const speedSel = speedWrap.append('select').attr('id', f('speed'));
  selectOptions(
    speedSel,
    SPEEDS.map((d) => [String(d), `${d}×`]),
    String(SPEEDS.includes(speed) ? speed : 1),
  );
  const tourBtn = bar
    .append('button')
    .attr('type', 'button')
    .attr('class', 'rl-dv-tour-btn')
    .attr('aria-controls', f('tour'))
    .attr('aria-expanded', 'false')
    .text(t.tour);
  const settingsBtn = bar
    .append('button')
    .attr('type', 'button')
    .attr('class', 'rl-dv-settings-btn')
    .attr('aria-expanded', 'false')
    .attr('aria-controls', f('settings'))
    .text(t.settings);
  const now = root.append('p').attr('class', 'rl-dv-now').attr('aria-live', 'polite').attr('id', f('now'));
  // What the last add or close did to the flows, under the sentence (the moved clients are ringed in the scene).
  const remapLine = root.append('p').attr('class', 'rl-dv-remap').attr('aria-live', 'polite');
  // The guided tour: in the flow above the scene while open, gone (hidden) when closed, so closing leaves the layout as it was.
  const tourBox = root.append('section').attr('class', 'rl-dv-tour').attr('id', f('tour')).attr('hidden', '').attr('aria-labelledby', f('tour-h'));
  const tourHead = tourBox.append('div').attr('class', 'rl-dv-tour-head');
  tourHead.append('h2').attr('id', f('tour-h')).text(t.tourTitle);
  const tourCount = tourHead.append('span').attr('class', 'rl-dv-tour-count');
  const tourText = tourBox.append('div').attr('class', 'rl-dv-tour-text').attr('tabindex', '-1').attr('aria-live', 'polite').attr('id', f('tour-text'));
  const tourNav = tourBox.append('div').attr('class', 'rl-dv-tour-nav');
  const tourBack = tourNav.append('button').attr('type', 'button').text(t.tourBack);
  const tourNext = tourNav.append('button').attr('type', 'button').attr('class', 'rl-primary').text(t.tourNext);
  const tourClose = tourNav.append('button').attr('type', 'button').attr('class', 'rl-dv-tour-close').text(t.tourClose);

  const layout = root.append('div').attr('class', 'rl-dv-layout');
  const stage = layout.append('div').attr('class', 'rl-dv-stage').attr('role', 'group').attr('aria-label', t.stage);
  const canvas = stage.append('canvas').attr('class', 'rl-dv-canvas').attr('aria-hidden', 'true');
  const overlay = new Overlay(stage.node()!);
  // The focused packet's numbers (and its listener lookup when that panel is open), in words under the scene.
  const stageLine = stage.append('p').attr('class', 'rl-dv-stage-line');
  const stageLookup = stage.append('p').attr('class', 'rl-dv-stage-lookup');
  // A stall toggle beside each listener (when the rows have room for one), and the tour's highlight, over the scene.
  const stalls = stage.append('div').attr('class', 'rl-dv-stalls');
  const spot = stage.append('div').attr('class', 'rl-dv-spot').attr('hidden', '').attr('aria-hidden', 'true');
  const legend = stage.append('ul').attr('class', 'rl-dv-legend').attr('aria-label', t.shapes);
  legend
    .selectAll('li')
    .data([...KINDS.map((k) => `${{ square: '■', diamond: '◆', bar: '▬', cross: '✕', triangle: '▲' }[KIND_SHAPE[k]]} ${k}`), t.colourLegend, t.keyboardPath])
    .join('li')
    .text((d) => d);

  // ---- Settings (opened on demand) ---------------------------------------------------------------
  const side = layout.append('div').attr('class', 'rl-dv-side');
  const settings = side
    .append('div')
    .attr('class', 'rl-dv-settings')
    .attr('id', f('settings'))
    .attr('hidden', '')
    .attr('role', 'region')
    .attr('aria-label', t.settings);
  const form = settings.append('form').attr('class', 'rl-dv-controls').attr('novalidate', '');
  on(form.node()!, 'submit', (e) => e.preventDefault());
  const errors = form.append('div').attr('class', 'rl-errors').attr('role', 'alert');
  const presetFs = form.append('fieldset').attr('class', 'rl-dv-fs rl-dv-presets');
  presetFs.append('legend').text(t.presetsLegend);
  const presetBtns = presetFs
    .selectAll('button')
    .data(PRESETS)
    .join('button')
    .attr('type', 'button')
    .attr('data-preset', (d) => d.id)
    .text((d) => t.presets[d.id]);

  // Live changes first: they are what a reader tries while watching the scene.
  const liveFs = form.append('fieldset').attr('class', 'rl-dv-fs');
  liveFs.append('legend').text(t.liveLegend);
  const closeSel = field(liveFs, 'close', t.listener).append('select').attr('id', f('close'));
  const closeBtn = liveFs.append('button').attr('type', 'button').text(t.closeListener);
  const addBtn = liveFs.append('button').attr('type', 'button').text(t.addListener);
  const cpuIn = field(liveFs, 'pin', 'SO_INCOMING_CPU').append('input').attr('id', f('pin')).attr('type', 'number').attr('min', 0).property('value', '0');
  const pinBtn = liveFs.append('button').attr('type', 'button').text(t.setCpu);
  const unpinBtn = liveFs.append('button').attr('type', 'button').text(t.clearCpu);
  const rateField = field(liveFs, 'srate', t.serviceRate, t.serviceRateHint);
  const srateIn = rateField
    .append('input')
    .attr('id', f('srate'))
    .attr('type', 'number')
    .attr('min', RATE_BOUNDS.lo)
    .attr('max', RATE_BOUNDS.hi)
    .attr('step', 0.1)
    .attr('aria-describedby', f('srate-hint'))
    .property('value', '1');
  const setRateBtn = liveFs.append('button').attr('type', 'button').text(t.setRate);
  const stallSetBtn = liveFs.append('button').attr('type', 'button').attr('aria-pressed', 'false').text(t.stallToggle);
  const secretIn = field(liveFs, 'secret', t.secret).append('input').attr('id', f('secret')).attr('spellcheck', 'false').property('value', hex32(opts.secret));
  const setSecretBtn = liveFs.append('button').attr('type', 'button').text(t.setSecret);
  const bootBtn = liveFs.append('button').attr('type', 'button').text(t.newBoot);

  const groupFs = form.append('fieldset').attr('class', 'rl-dv-fs');
  groupFs.append('legend').text(t.groupLegend);
  const kernelSel = field(groupFs, 'kernel', t.kernel).append('select').attr('id', f('kernel'));
  selectOptions(
    kernelSel,
    profiles()
      .map((p) => `${p.release.major}.${p.release.minor}`)
      .map((k) => [k, k]),
    opts.kernel,
  );
  const protoSel = field(groupFs, 'proto', t.proto).append('select').attr('id', f('proto'));
  selectOptions(protoSel, PROTO_OPTIONS, opts.proto);
  const bindSel = field(groupFs, 'bind', t.bound).append('select').attr('id', f('bind'));
  selectOptions(
    bindSel,
    [
      ['specific', t.bindOptions[0]],
      ['wildcard', t.bindOptions[1]],
    ],
    opts.wildcard ? 'wildcard' : 'specific',
  );
  /** A whole-number field of the group form, from `min` to `max` (none: no upper bound). */
  const numberIn = (name: string, label: string, min: number, max: number | null, value: number, hint?: string) => {
    const input = field(groupFs, name, label, hint).append('input').attr('id', f(name)).attr('type', 'number').attr('min', min);
    if (max !== null) input.attr('max', max);
    if (hint) input.attr('aria-describedby', f(`${name}-hint`));
    return input.property('value', String(value));
  };
  const listenersIn = numberIn('listeners', t.listeners, 1, LIMITS.listeners, opts.listeners);
  const clientsIn = numberIn('clients', t.clients, 1, LIMITS.clients, opts.clients);
  const rateIn = numberIn('rate', t.rate, 1, LIMITS.rate, opts.rate, t.rateHint(LIMITS.rate));
  const cpusIn = numberIn('cpus', t.cpus, 1, 64, opts.cpus);
  const progSel = field(groupFs, 'program', t.program).append('select').attr('id', f('program'));
  selectOptions(progSel, [
    ['none', t.programOptions[0]],
    ['cpu', t.programOptions[1]],
    ['index', t.programOptions[2]],
    ['payload_mod', t.programOptions[3]],
    ['pass', t.programOptions[4]],
    ['drop', t.programOptions[5]],
  ]);
  const progIdxField = field(groupFs, 'progidx', t.fixedIndex).attr('hidden', '');
  const progIdx = progIdxField.append('input').attr('id', f('progidx')).attr('type', 'number').attr('min', 0).property('value', '99');
  const progModField = field(groupFs, 'progmod', t.payloadModulus).attr('hidden', '');
  const progMod = progModField.append('input').attr('id', f('progmod')).attr('type', 'number').attr('min', 1).property('value', '3');
  // A program's own setting shows only with that program.
  const showProgramFields = () => {
    const p = String(progSel.property('value'));
    progIdxField.property('hidden', p !== 'index');
    progModField.property('hidden', p !== 'payload_mod');
  };
  on(progSel.node()!, 'change', showProgramFields);
  const seedIn = numberIn('seed', t.seed, 0, null, opts.seed);
  const listWrap = groupFs.append('div').attr('class', 'rl-field rl-dv-wide');
  listWrap.append('label').attr('for', f('clientlist')).text(t.clientList);
  const clientList = listWrap.append('textarea').attr('id', f('clientlist')).attr('rows', 2).attr('spellcheck', 'false');
  // A paste or a drop of more clients than the bound is refused before it
  // reaches the box: the browser itself stalls for a minute laying out a
  // million lines (a drop used to skip the check).
  const refuseTooMany = (ev: Event, text: string) => {
    const past = firstLinePast(text, LIMITS.clients);
    if (past === undefined) return;
    ev.preventDefault();
    errors.text(t.tooManyClients(past, LIMITS.clients));
  };
  clientList.on('paste', (ev: ClipboardEvent) => refuseTooMany(ev, ev.clipboardData?.getData('text/plain') ?? ''));
  clientList.on('drop', (ev: DragEvent) => refuseTooMany(ev, ev.dataTransfer?.getData('text/plain') ?? ''));
  const restartBtn = groupFs.append('button').attr('type', 'button').attr('class', 'rl-primary').text(t.applyRestart);

  side.append('h2').text(t.perListener);
  const chartBox = side.append('div').attr('class', 'rl-dv-chartbox');
  const chart = new Chart(chartBox.node()!);
  const figures = side.append('dl').attr('class', 'rl-dv-figures');
  side.append('h2').attr('class', 'rl-dv-workers-h').text(t.workersHeading);
  const workersBox = side
    .append('div')
    .attr('class', 'rl-dv-workers')
    .attr('tabindex', '0')
    .attr('role', 'region')
    .attr('aria-label', seq > 1 ? `${t.workersHeading} (${seq})` : t.workersHeading);
  // The caption and the rows are written every frame (dispatch-panels.ts).
  const workersTable = renderTextTable(workersBox, { caption: '', head: t.workersHead, rows: [] });
  const workersCaption = workersTable.select<HTMLTableCaptionElement>('caption');
  const workersBody = workersTable.select<HTMLTableSectionElement>('tbody');

  // ---- Below the scene ---------------------------------------------------------------------------
  const movedBox = root.append('details').attr('class', 'rl-dv-moved').property('hidden', true);
  movedBox.append('summary').text(t.movedSummary);
  const movedBody = movedBox.append('div').attr('class', 'rl-dv-moved-body').attr('tabindex', '0').attr('role', 'region').attr('aria-label', t.movedSummary);
  const summary = root.append('p').attr('class', 'rl-dv-summary').attr('id', f('summary'));

  const tableWrap = root.append('div').attr('class', 'rl-dv-events');
  const tbody = renderTextTable(tableWrap, { caption: t.eventList, head: t.eventHead, rows: [] }).select<HTMLTableSectionElement>('tbody');
  const inspector = root.append('section').attr('class', 'rl-dv-inspector').attr('aria-labelledby', f('insp-h'));
  const nth = seq > 1 ? ` (${seq})` : '';
  inspector.append('h2').attr('id', f('insp-h')).text(`${t.inspector}${nth}`);
  const inspBody = inspector.append('div').attr('aria-live', 'polite');
  inspBody.append('p').text(t.inspectorHint);

  // ---- Listener lookup (the full lookup model, loaded when the panel is first opened) --------------
  const lookupSec = root.append('details').attr('class', 'rl-dv-lookup');
  lookupSec.append('summary').append('h2').attr('id', f('lk-h')).text(`${t.lookupHeading}${nth}`);
  const lkField = lookupSec.append('div').attr('class', 'rl-field');
  lkField.append('label').attr('for', f('lkscene')).text(t.lookupLayout);
  const lkSel = lkField.append('select').attr('id', f('lkscene'));
  selectOptions(lkSel, [
    ['group', t.lookupScenes[0]],
    ['addr_any', t.lookupScenes[1]],
  ]);
  const lkBody = lookupSec.append('div').attr('class', 'rl-dv-lookup-body').attr('aria-live', 'polite');
  lkBody.append('p').text(t.lookupHint);

  return {
    playBtn,
    backBtn,
    fwdBtn,
    speedSel,
    tourBtn,
    settingsBtn,
    now,
    remapLine,
    tourBox,
    tourCount,
    tourText,
    tourBack,
    tourNext,
    tourClose,
    stage,
    canvas,
    overlay,
    stageLine,
    stageLookup,
    stalls,
    spot,
    settings,
    errors,
    presetBtns,
    closeSel,
    closeBtn,
    addBtn,
    cpuIn,
    pinBtn,
    unpinBtn,
    srateIn,
    setRateBtn,
    stallSetBtn,
    secretIn,
    setSecretBtn,
    bootBtn,
    kernelSel,
    protoSel,
    bindSel,
    listenersIn,
    clientsIn,
    rateIn,
    cpusIn,
    progSel,
    progIdx,
    progMod,
    showProgramFields,
    seedIn,
    clientList,
    restartBtn,
    chart,
    figures,
    workersCaption,
    workersBody,
    movedBox,
    movedBody,
    summary,
    tbody,
    inspBody,
    nth,
    lookupSec,
    lkSel,
    lkBody,
  };
}

/** The visualizer's elements, as {@link buildDispatchDom} made them. */
export type DispatchDom = ReturnType<typeof buildDispatchDom>;

/** The view's state, shared by the widget's parts (mount owns it). */
export interface ViewState {
  playing: boolean;
  /** The stage is on screen (the clock runs). */
  visible: boolean;
  /** What the last preset teaches, shown as the sentence under the controls until the next change. */
  lesson: string | null;
  /** The event the inspector shows. */
  inspected: number | null;
  /** The packet drawn along its route when stepping, and when its move started. */
  focus: { seq: number; start: number } | null;
  /** The scene's rows and labels as last drawn. */
  struct: Structure;
  /** The scene's drawing box in the canvas, and the canvas size (CSS pixels). */
  box: Box;
  cssW: number;
  cssH: number;
}

/** What the widget's parts share: the host element, the scene, the words, the elements and the view's state. */
export interface DispatchCtx {
  el: HTMLElement;
  lang: Lang;
  t: DispatchText;
  sim: DispatchSim;
  dom: DispatchDom;
  s: ViewState;
  /** prefers-reduced-motion. */
  reduced: boolean;
  on: On;
}
