/** Scripts every page runs: the place-keeping language switch, and keyboard access to wide tables. */
import './keep-place';

/** A Markdown table wider than the column scrolls; it must then be reachable from the keyboard. */
function focusableWideTables(): void {
  for (const t of document.querySelectorAll<HTMLTableElement>('.sl-markdown-content table')) {
    if (t.scrollWidth > t.clientWidth + 1 && !t.hasAttribute('tabindex')) t.tabIndex = 0;
  }
}
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', focusableWideTables, { once: true });
else focusableWideTables();

/** Iframes of this site's own widgets (the embedding page's live example) take the height they report. */
window.addEventListener('message', (e) => {
  const d = e.data as { source?: string; type?: string; detail?: { height?: number } } | null;
  if (e.origin !== location.origin || d?.source !== 'reuseport-lab' || d.type !== 'height') return;
  const h = d.detail?.height;
  if (typeof h !== 'number' || !Number.isFinite(h) || h <= 0) return;
  for (const f of document.querySelectorAll('iframe')) {
    if (f.contentWindow === e.source) f.style.height = `${Math.min(4000, Math.ceil(h))}px`;
  }
});
