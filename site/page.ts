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
