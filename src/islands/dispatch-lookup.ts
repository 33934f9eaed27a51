/**
 * The dispatch visualizer's Listener lookup panel: the inspected packet
 * looked up by the model's full lookup in the scene's own Host (the one the
 * controls step and the animation asks, so the panel and the dots cannot
 * disagree), or in a second Host made by the addr_any selftest's calls. Its
 * answer is shown in the panel, in one line under the scene, and in one line
 * of the inspector.
 */
import { Host } from '../model/index';
import { renderLookup } from '../render/dispatch/lookup';
import { addrAnyPlan, describePlan, groupPlan, hostPacket, lookupView, type HostPlan, type LookupScene, type LookupView } from '../scene/dispatch/lookup';
import type { DispatchCtx } from './dispatch-dom';

/** The panel: its drawing, the inspector's line it fills, and the addr_any Host it holds. */
export function lookupPanel({ t, lang, sim, dom, s, on }: DispatchCtx) {
  const { lkBody, lkSel, lookupSec, stageLookup } = dom;
  /** The addr_any preset's Host, for the kernel and secret it was made with. */
  let anyHost: { key: string; host: Host } | null = null;
  /** The inspector's line about the lookup (the inspector makes a new one per packet). */
  let inspLookup: HTMLElement | null = null;
  const lookupOpen = () => (lookupSec.node() as HTMLDetailsElement).open;
  /** The Host `scene` is asked in, and what its sockets are in the scene. */
  const hostOf = (scene: LookupScene): { plan: HostPlan; host: Host } => {
    if (scene === 'group') {
      const sum = sim.summary();
      return { plan: groupPlan(sim.host.results(), sim.opts.proto, sum.bind, sum.port), host: sim.host };
    }
    const plan = addrAnyPlan(sim.opts.proto, sim.opts.secret);
    const key = `${sim.opts.kernel}|${sim.opts.proto}|${sim.opts.secret}`;
    if (anyHost?.key !== key) {
      anyHost?.host.dispose();
      anyHost = null;
      anyHost = { key, host: new Host(sim.opts.kernel, plan.layout) };
    }
    return { plan, host: anyHost.host };
  };
  /** The model's lookup of the inspected packet in `scene`'s layout (the event's own answer for the scene's Host). */
  const lookupOf = (scene: LookupScene, seq: number): { plan: HostPlan; view: LookupView } | { error: string } | null => {
    const e = sim.log.get(seq);
    if (!e) return null;
    try {
      const { plan, host } = hostOf(scene);
      // The scene's packets were looked up when they were sent: a change since then is in the Host, not in the event.
      const ex = host.lookup(hostPacket(plan, sim.opts.proto, e.tuple, e.cpu, e.payload));
      return { plan, view: lookupView(plan, host.results(), ex, lang) };
    } catch (err) {
      return { error: (err as Error).message };
    }
  };
  const showLookup = () => {
    if (s.inspected === null || !lookupOpen()) {
      if (inspLookup && !lookupOpen()) inspLookup.textContent = t.lookupClosed;
      return;
    }
    const seq = s.inspected;
    const scene = lkSel.property('value') as LookupScene;
    const r = lookupOf(scene, seq);
    lkBody.selectAll('*').remove();
    if (!r) return;
    if ('error' in r) lkBody.append('p').attr('class', 'rl-fallback').text(t.lookupRefused(r.error));
    else renderLookup(lkBody.node()!, describePlan(r.plan, lang), r.view, 3, lang);
    // One candidate in a few words: its socket and score, from the scene's facts (not from the table's words).
    const walkRow = (w: LookupView['walks'][number], i: number) =>
      `${t.socket(w.sockets[i]!)} ${t.score} ${w.chips[i]!.score}${w.highlight.includes(i) ? ' ✓' : ''}`;
    stageLookup.text(
      'error' in r
        ? ''
        : `${t.lookupOf(seq, scene === 'addr_any')}: ` +
            `${r.view.walks.map((w) => `${w.caption} [${w.rows.map((_, i) => walkRow(w, i)).join(', ')}]`).join(' → ')} ` +
            `→ ${r.view.socket === null ? t.noSocket : `${t.socket(r.view.socket)}${r.view.listener !== null ? ` = L${r.view.listener}` : ''}`}`,
    );
    // The inspector names the lookup in the visualized group's layout in one line.
    const g = scene === 'group' ? r : lookupOf('group', seq);
    if (inspLookup && g) {
      const e = sim.log.get(seq);
      if ('error' in g) inspLookup.textContent = t.inspLookupRefused(g.error);
      else {
        const agree = e && g.view.listener !== e.listener ? t.liveDiffers(e.listener === null ? t.noSocket : `L${e.listener}`) : '';
        inspLookup.textContent = t.inspLookup(g.view.walks.map((w) => t.candidates(w.caption, w.rows.length)).join('; '), g.view.reason, agree);
      }
    }
  };
  on(lkSel.node()!, 'change', showLookup);
  on(lookupSec.node()!, 'toggle', () => {
    if (!lookupOpen()) {
      stageLookup.text('');
      return;
    }
    showLookup();
    if (s.inspected === null) {
      lkBody.selectAll('*').remove();
      lkBody.append('p').text(t.lookupHint);
    }
  });

  return {
    show: showLookup,
    /** The inspector's new line for the lookup, or null when the inspector was cleared. */
    setInspectorLine: (p: HTMLElement | null) => {
      inspLookup = p;
    },
    /** The panel as at the start (after a restart). */
    reset: () => {
      inspLookup = null;
      stageLookup.text('');
      lkBody.selectAll('*').remove();
      lkBody.append('p').text(t.lookupHint);
    },
    /** Draws the scene's Host's lookup of event `seq` into `node` (the inspector's record when no group picked). */
    renderWalk: (node: HTMLElement, seq: number) => {
      const r = lookupOf('group', seq);
      if (r && !('error' in r)) renderLookup(node, describePlan(r.plan, lang), r.view, 4, lang);
    },
    /** Opens the panel on `scene`'s layout. */
    open: (scene: LookupScene) => {
      lkSel.property('value', scene);
      (lookupSec.node() as HTMLDetailsElement).open = true;
    },
    dispose: () => anyHost?.host.dispose(),
  };
}
