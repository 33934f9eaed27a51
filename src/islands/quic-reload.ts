/**
 * The QUIC reload scenario's card: `<reuseport-quic-reload>`. The model
 * runs the scenario (`quicReload`, the script the agent runs live) with
 * and without the connection-ID program under a boot's hash key; the card
 * lays its counts beside the recording of this site's kernel and says how
 * many datagrams the two agreed on. "Another boot" draws another key (the
 * counts that depend on the hash move; the program's do not); "The
 * recording's key" runs the model under the key the agent recovered.
 *
 * States (`data-state`): `ready`, `error`, `disposed`.
 */
import { loadLookup } from '../model/lookup';
import { quicReload } from '../model/editor';
import { sayUi, type Lang } from '../model/messages';
import type { Fates } from '../model/generated/Fates';
import { tableElement } from '../render/table';
import { agreementOf, fateLines, type ReloadRecording } from '../scene/quic-reload-view';
import { Rng } from '../scene/dispatch/rng';
import { hex32 } from '../hex';
import { defineIsland, hostOf, islandElement } from './element';
import { h } from './dom';
import { pageLang, siteUrl } from './site';

/** The scenario as the gallery runs it (the agent's, `ReloadSpec::gallery`). */
const SPEC = { workers: 4, flowsBefore: 64, flowsDuring: 64, port: 4433, seed: 1 };

/** The card; made by {@link QuicReloadCard.mount}. */
export class QuicReloadCard {
  readonly #el: HTMLElement;
  readonly #lang: Lang;
  readonly #rec: ReloadRecording | null;
  readonly #rng = new Rng(0x9e10ad);
  readonly #table: HTMLElement;
  readonly #keyLine: HTMLElement;
  readonly #ac = new AbortController();

  static async mount(el: HTMLElement): Promise<QuicReloadCard> {
    await loadLookup();
    let rec: ReloadRecording | null = null;
    const res = await fetch(siteUrl('traces/quic-reload.json'));
    if (res.ok) rec = (await res.json()) as ReloadRecording;
    const c = new QuicReloadCard(el, rec);
    hostOf(el).dataset.state = 'ready';
    return c;
  }

  private constructor(el: HTMLElement, rec: ReloadRecording | null) {
    this.#el = el;
    this.#lang = pageLang(el);
    this.#rec = rec;
    const t = (k: Parameters<typeof sayUi>[1], f: Record<string, string | number> = {}) => sayUi(this.#lang, k, f);
    const box = el.appendChild(h('div', 'rl-qr'));
    box.append(h('p', 'rl-lede', t('quic_reload.lede')));
    const actions = box.appendChild(h('div', 'rl-ed-actions'));
    const boot = actions.appendChild(h('button', '', t('quic_reload.another_boot'), { type: 'button' }));
    boot.addEventListener('click', () => this.#show(this.#rng.u32()), { signal: this.#ac.signal });
    if (rec?.key != null) {
      const recorded = actions.appendChild(h('button', '', t('quic_reload.recorded_key'), { type: 'button' }));
      recorded.addEventListener('click', () => this.#show(rec.key!), { signal: this.#ac.signal });
    }
    this.#keyLine = box.appendChild(h('p', 'rl-hint', '', { 'aria-live': 'polite' }));
    this.#table = box.appendChild(h('div', 'rl-ed-scroll', undefined, { tabindex: '0', role: 'region', 'aria-label': t('quic_reload.caption') }));
    if (rec) {
      const a = agreementOf(rec);
      box.append(
        h(
          'p',
          'rl-qr-agree',
          t('quic_reload.agreement', { agreed: a.agreed, compared: a.compared, release: rec.kernel.release, key: rec.key === null ? '?' : hex32(rec.key) }),
        ),
      );
    } else box.append(h('p', 'rl-error', t('quic_reload.no_recording')));
    this.#show(0x5eed0001);
  }

  /** Simulates both variants under `key` and shows them beside the recording. */
  #show(key: number): void {
    const lang = this.#lang;
    const run = (cidProgram: boolean): Fates => quicReload({ ...SPEC, cidProgram }, '6.18', key).fates;
    const lines = fateLines({ none: run(false), cid: run(true) }, this.#rec);
    const dash = (v: number | null) => (v === null ? '–' : String(v));
    const head = [
      sayUi(lang, 'quic_reload.col_flows'),
      sayUi(lang, 'quic_reload.col_sim_none'),
      sayUi(lang, 'quic_reload.col_kernel_none'),
      sayUi(lang, 'quic_reload.col_sim_cid'),
      sayUi(lang, 'quic_reload.col_kernel_cid'),
    ];
    const rows = lines.map((l) => [sayUi(lang, `quic_reload.fate_${l.fate}`), ...l.values.map(dash)]);
    this.#table.replaceChildren(tableElement({ caption: sayUi(lang, 'quic_reload.caption'), head, rows, rowHeads: true, className: 'rl-table rl-qr-table' }));
    this.#keyLine.textContent = sayUi(lang, 'quic_reload.key', { key: hex32(key) });
  }

  dispose(): void {
    this.#ac.abort();
    hostOf(this.#el).dataset.state = 'disposed';
    this.#el.replaceChildren();
  }
}

async function mountQuicReload(el: HTMLElement): Promise<() => void> {
  const c = await QuicReloadCard.mount(el);
  return () => c.dispose();
}

/** Registers `<reuseport-quic-reload>` once. */
export function defineQuicReloadElement(): void {
  defineIsland(
    'reuseport-quic-reload',
    islandElement(mountQuicReload, () => ({})),
  );
}
