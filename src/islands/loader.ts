/**
 * Hydrates the widgets of a pre-rendered page: each `reuseport-*` element's
 * module (and the wasm model it needs) is fetched only when the element comes
 * within a screen of the viewport, then the element is defined and mounts
 * itself. Nothing runs for a page without widgets.
 */

/** Tag → the module that defines it. */
const islands: Record<string, () => Promise<{ define: () => void }>> = {
  'reuseport-dispatch': () => import('./dispatch').then((m) => ({ define: m.defineDispatchElement })),
  'reuseport-lookup': () => import('./lookup').then((m) => ({ define: m.defineLookupElement })),
  'reuseport-paste': () => import('./paste').then((m) => ({ define: m.definePasteElement })),
  'reuseport-bind': () => import('./bind').then((m) => ({ define: m.defineBindElement })),
  'reuseport-trace': () => import('./traces').then((m) => ({ define: m.defineTraceElements })),
  'reuseport-traces': () => import('./traces').then((m) => ({ define: m.defineTraceElements })),
};

const started = new Set<string>();

function hydrate(tag: string): void {
  if (started.has(tag)) return;
  started.add(tag);
  const load = islands[tag];
  if (!load) return;
  load()
    .then((m) => m.define())
    .catch((err: unknown) => {
      for (const el of document.querySelectorAll(tag)) {
        const p = document.createElement('p');
        p.className = 'rl-error';
        p.setAttribute('role', 'alert');
        p.textContent = `This widget failed to load: ${err instanceof Error ? err.message : String(err)}`;
        el.replaceChildren(p);
      }
    });
}

function start(): void {
  const els = Array.from(document.querySelectorAll(Object.keys(islands).join(',')));
  if (els.length === 0) return;
  if (!('IntersectionObserver' in window)) {
    for (const el of els) {
      el.classList.add('not-content');
      hydrate(el.localName);
    }
    return;
  }
  const io = new IntersectionObserver(
    (entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        io.unobserve(e.target);
        hydrate(e.target.localName);
      }
    },
    { rootMargin: '100% 0px' },
  );
  for (const el of els) {
    // Starlight's Markdown typography must not reach inside a widget.
    el.classList.add('not-content');
    io.observe(el);
  }
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start, { once: true });
else start();
