/**
 * The small element builders every widget and drawing uses: text only
 * through textContent, attributes and properties by name; a labelled control.
 */
/** One element with a class, text and attributes: the widgets' small DOM builder. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string, attrs: Record<string, string> = {}): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

/** One element with properties (`class` sets the class name) and children: the paste analyser's DOM builder. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<HTMLElementTagNameMap[K]> & { class?: string } = {},
  ...kids: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = String(v);
    else (e as unknown as Record<string, unknown>)[k] = v;
  }
  e.append(...kids);
  return e;
}

/** A labelled control, with its hint (read out with the control) when given. */
export function field(id: string, label: string, control: HTMLElement, hint?: string): HTMLElement {
  const wrap = el('div', { class: 'rl-field' });
  wrap.append(el('label', { htmlFor: id }, label));
  if (hint) {
    const h = el('span', { class: 'rl-hint', id: `${id}-hint` }, hint);
    control.setAttribute('aria-describedby', h.id);
    wrap.append(h);
  }
  control.id = id;
  wrap.append(control);
  return wrap;
}
