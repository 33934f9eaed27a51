/**
 * The dispatch visualizer's Listener lookup panel: the inspected packet
 * looked up by the full model (the larger `pkg-lookup` package, fetched when
 * the panel is first opened) in a layout of sockets that mirrors the scene's
 * group, or in the wildcard-and-specific layout. Its answer is shown in the
 * panel, in one line under the scene, and in one line of the inspector.
 */
import { renderLookup } from '../render/dispatch/lookup';
import { addrAnyPlan, describePlan, groupPlan, hostPacket, lookupView, type HostPlan, type LookupScene, type LookupView } from '../scene/dispatch/lookup';
import type { DispatchSim } from '../scene/dispatch/sim';
import type { DispatchCtx } from './dispatch-dom';

type LookupModule = typeof import('../model/lookup');

/** The panel: its drawing, the inspector's line it fills, and the Host it holds. */
export function lookupPanel({ t, lang, sim, dom, s, on }: DispatchCtx) {
  const { lkBody, lkSel, lookupSec, stageLookup } = dom;
  // The lookup model, its Host for the current layout, and the last answer.
  let lk: LookupModule | null = null;
  let lkHost: { key: string; host: InstanceType<LookupModule['Host']> } | null = null;
  /** The inspector's line about the lookup (the inspector makes a new one per packet). */
  let inspLookup: HTMLElement | null = null;
  let lkReady: Promise<void> | null = null;
  /** Fetches the larger lookup package, once, when the Listener lookup panel is first opened. */
  const loadLookupModel = (): Promise<void> => {
    lkReady ??= import('../model/lookup').then(async (m) => {
      await m.loadLookup();
      lk = m;
    });
    lkReady.catch((e: unknown) => lkBody.text(t.lookupFailed(e instanceof Error ? e.message : String(e))));
    return lkReady;
  };
  const lookupOpen = () => (lookupSec.node() as HTMLDetailsElement).open;
  const planFor = (scene: LookupScene): HostPlan => {
    const s = sim.summary();
    return scene === 'addr_any'
      ? addrAnyPlan(sim.opts.proto, sim.opts.secret)
      : groupPlan({
          proto: sim.opts.proto,
          bind: s.bind,
          port: s.port,
          secret: sim.opts.secret,
          program: sim.opts.program,
          members: sim.group.members(),
          closedOrder: closedOrderOf(sim),
        });
  };
  const hostFor = (m: LookupModule, plan: HostPlan) => {
    const key = `${sim.opts.kernel}|${JSON.stringify(plan.layout)}`;
    if (lkHost?.key !== key) {
      lkHost?.host.dispose();
      lkHost = null;
      lkHost = { key, host: new m.Host(sim.opts.kernel, plan.layout) };
    }
    return lkHost.host;
  };
  /** The model's lookup of the inspected packet in `scene`'s layout. */
  const lookupOf = (scene: LookupScene, seq: number): { plan: HostPlan; view: LookupView } | { error: string } | null => {
    const e = sim.log.get(seq);
    if (!e || !lk) return null;
    const plan = planFor(scene);
    try {
      const host = hostFor(lk, plan);
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
    if (!lk) {
      lkBody.selectAll('*').remove();
      lkBody.append('p').text(t.lookupLoading);
      void loadLookupModel().then(() => s.inspected === seq && showLookup());
      return;
    }
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
    void loadLookupModel().then(showLookup, () => {});
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
    /** Opens the panel on `scene`'s layout. */
    open: (scene: LookupScene) => {
      lkSel.property('value', scene);
      (lookupSec.node() as HTMLDetailsElement).open = true;
    },
    dispose: () => lkHost?.host.dispose(),
  };
}

function closedOrderOf(sim: DispatchSim): number[] | undefined {
  const h = sim.closeHistory();
  return h.joinAfterClose ? undefined : h.order;
}
