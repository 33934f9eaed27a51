/** One element with a class, text and attributes: the widgets' small DOM builder. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string, attrs: Record<string, string> = {}): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}
