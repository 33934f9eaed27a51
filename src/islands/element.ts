/**
 * Islands as custom elements: each widget's `mount(el, options) → dispose`
 * wrapped once, so a course page can embed it as a tag.
 *
 * - The widget lives in an open shadow root with its own adopted stylesheet:
 *   no rule of the host page reaches in (`:host { all: initial }` also stops
 *   inherited fonts and colours), and no rule of ours reaches out.
 * - The element mounts when connected and disposes when disconnected, also
 *   when it is removed before an asynchronous mount has finished.
 * - A change to an observed attribute remounts it with the new options
 *   (coalesced: several attribute changes in one task remount once).
 */
import { langOf, sayUi, type Lang } from '../model/messages';
import { widgetSheets } from '../styles/index';
import { isEmbedded } from './context';
import { embedPanel } from './embed-panel';
import { hostOf } from './host';

export { currentSettings, hostOf, provideSettings } from './host';

/** The events every widget may send, bubbling and crossing the shadow boundary as `reuseport:<kind>`. */
export type WidgetEventKind = 'ready' | 'started' | 'stepped' | 'answered' | 'completed' | 'error';

/** Dispatches `reuseport:<kind>` from the widget's element with `detail` (plain data, so an iframe can post it on). */
export function emit(el: Element, kind: WidgetEventKind, detail: Record<string, unknown> = {}): void {
  hostOf(el).dispatchEvent(new CustomEvent(`reuseport:${kind}`, { detail, bubbles: true, composed: true }));
}

/**
 * A custom element class that mounts `mount` with the options `read` takes
 * from its attributes; changing one of `observed` remounts it.
 */
export function islandElement<O>(
  mount: (el: HTMLElement, options: O) => Promise<() => void>,
  read: (el: HTMLElement) => O,
  observed: readonly string[] = [],
): CustomElementConstructor {
  return class extends HTMLElement {
    static get observedAttributes(): string[] {
      return [...observed];
    }
    #dispose?: () => void;
    #gen = 0;
    #target?: HTMLElement;
    #pending = false;
    #panel?: () => void;
    connectedCallback(): void {
      this.#mount();
    }
    disconnectedCallback(): void {
      this.#unmount();
    }
    attributeChangedCallback(_name: string, old: string | null, now: string | null): void {
      if (old === now || !this.#target || this.#pending) return;
      this.#pending = true;
      queueMicrotask(() => {
        this.#pending = false;
        if (!this.isConnected) return;
        this.#unmount();
        this.#mount();
      });
    }
    #mount(): void {
      const shadow = this.shadowRoot ?? this.attachShadow({ mode: 'open' });
      if ('adoptedStyleSheets' in shadow) shadow.adoptedStyleSheets = widgetSheets();
      const target = document.createElement('div');
      target.className = 'rl-root';
      target.setAttribute('part', 'root');
      shadow.replaceChildren(target);
      this.#target = target;
      const gen = ++this.#gen;
      // Reading the attributes may throw (a layout that is not JSON): that failure goes the way of a
      // failed mount, so the widget says why instead of staying blank with the error in the console.
      let started: Promise<() => void>;
      try {
        started = mount(target, read(this));
      } catch (err) {
        started = Promise.reject(err);
      }
      started.then(
        (d) => {
          if (gen === this.#gen && this.isConnected) {
            this.#dispose = d;
            // The page's stylesheet holds the widget's place until now (no layout shift while it loads).
            this.toggleAttribute('data-mounted', true);
            if (!isEmbedded()) this.#panel = embedPanel(this, shadow);
            emit(target, 'ready', { widget: this.localName });
          } else d();
        },
        (err: unknown) => {
          if (gen !== this.#gen) return;
          const p = document.createElement('p');
          p.className = 'rl-error';
          p.setAttribute('role', 'alert');
          p.textContent = sayUi(langAround(this), 'widget.failed', { message: err instanceof Error ? err.message : String(err) });
          target.replaceChildren(p);
          this.toggleAttribute('data-mounted', true);
          emit(target, 'error', { message: p.textContent });
        },
      );
    }
    #unmount(): void {
      this.#gen++;
      this.#panel?.();
      this.#panel = undefined;
      this.#dispose?.();
      this.#dispose = undefined;
    }
  };
}

/** The language around the widget (the page's, or an iframe's `?lang=`). */
function langAround(host: HTMLElement): Lang {
  return langOf(host.closest('[lang]')?.getAttribute('lang') ?? document.documentElement.lang);
}

/** Defines `name` once (a page may load several islands that register it). */
export function defineIsland(name: string, ctor: CustomElementConstructor): void {
  if (!customElements.get(name)) customElements.define(name, ctor);
}
