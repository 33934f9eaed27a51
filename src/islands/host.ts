/**
 * The custom element a widget sits in, and the settings it embeds with: a
 * leaf that the element wrapper (element.ts), the "Embed this" panel and
 * the language lookup (site.ts) all read, so none of them imports another.
 */

const settingsOf = new WeakMap<HTMLElement, () => Record<string, string | boolean>>();

/** The custom element a widget's mount target sits in (the target itself outside a shadow root). */
export function hostOf(el: Element): HTMLElement {
  const root = el.getRootNode();
  return (root instanceof ShadowRoot ? root.host : el) as HTMLElement;
}

/**
 * A widget whose settings change inside it (the visualizer's controls) tells
 * the "Embed this" panel its current settings as attributes (`true` for a
 * present boolean attribute); otherwise the panel uses the element's own.
 */
export function provideSettings(el: Element, settings: () => Record<string, string | boolean>): void {
  settingsOf.set(hostOf(el), settings);
}

/** The settings to embed a widget with: what it provided, else its attributes. */
export function currentSettings(host: HTMLElement): Record<string, string | boolean> {
  const provided = settingsOf.get(host);
  if (provided) return provided();
  const out: Record<string, string | boolean> = {};
  for (const a of host.attributes)
    if (!['class', 'style', 'id', 'data-state', 'data-mounted', 'from-url'].includes(a.name)) out[a.name] = a.value === '' ? true : a.value;
  return out;
}
