/**
 * The language switch keeps the reader's place: both languages have the same
 * `##` sections in the same order, so before Starlight's language picker
 * navigates, the index of the section in view is remembered, and the page in
 * the other language scrolls to its section of the same index.
 */
const KEY = 'rl-keep-place';

function sections(): HTMLElement[] {
  return Array.from(document.querySelectorAll<HTMLElement>('.sl-markdown-content h2'));
}

document.addEventListener(
  'change',
  (e) => {
    const t = e.target;
    if (!(t instanceof HTMLSelectElement) || !t.closest('starlight-lang-select')) return;
    const hs = sections();
    let idx = -1;
    for (const [i, h] of hs.entries()) if (h.getBoundingClientRect().top < window.innerHeight / 3) idx = i;
    try {
      sessionStorage.setItem(KEY, JSON.stringify({ idx, at: Date.now() }));
    } catch {
      /* storage may be unavailable (private mode); the switch still works */
    }
  },
  true,
);

function restore(): void {
  let saved: { idx: number; at: number } | undefined;
  try {
    const raw = sessionStorage.getItem(KEY);
    sessionStorage.removeItem(KEY);
    saved = raw ? (JSON.parse(raw) as { idx: number; at: number }) : undefined;
  } catch {
    return;
  }
  if (!saved || Date.now() - saved.at > 10_000 || location.hash) return;
  const h = sections()[saved.idx];
  if (h) h.scrollIntoView({ block: 'start' });
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', restore, { once: true });
else restore();
