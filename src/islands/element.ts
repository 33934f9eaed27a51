/**
 * Islands as custom elements: each widget's `mount(el, options) → dispose`
 * wrapped once, so a course page can embed it as a tag. The element mounts
 * when connected and disposes when disconnected, also when it is removed
 * before an asynchronous mount has finished.
 */

/** A custom element class that mounts `mount` with the options `read` takes from its attributes. */
export function islandElement<O>(mount: (el: HTMLElement, options: O) => Promise<() => void>, read: (el: HTMLElement) => O): CustomElementConstructor {
  return class extends HTMLElement {
    #dispose?: () => void;
    #gen = 0;
    connectedCallback(): void {
      const gen = ++this.#gen;
      void mount(this, read(this)).then((d) => {
        if (gen === this.#gen && this.isConnected) this.#dispose = d;
        else d();
      });
    }
    disconnectedCallback(): void {
      this.#gen++;
      this.#dispose?.();
      this.#dispose = undefined;
    }
  };
}

/** Defines `name` once (a page may load several islands that register it). */
export function defineIsland(name: string, ctor: CustomElementConstructor): void {
  if (!customElements.get(name)) customElements.define(name, ctor);
}
