/**
 * Hydrates widgets: each `reuseport-*` element's module (and the wasm model
 * it needs) is fetched only when the element comes within a screen of the
 * viewport, then the element is defined and mounts itself. Elements added
 * later (a course platform rendering its page after load) are found too.
 * Nothing runs for a page without widgets. The site (site-loader.ts) and the
 * embed script (src/embed/index.ts) both start it.
 */

/** Tag → the module that defines it. */
export const islands: Record<string, () => Promise<{ define: () => void }>> = {
  'reuseport-dispatch': () => import('./dispatch').then((m) => ({ define: m.defineDispatchElement })),
  'reuseport-lookup': () => import('./lookup').then((m) => ({ define: m.defineLookupElement })),
  'reuseport-paste': () => import('./paste').then((m) => ({ define: m.definePasteElement })),
  'reuseport-bind': () => import('./bind').then((m) => ({ define: m.defineBindElement })),
  'reuseport-bind-check': () => import('./bind').then((m) => ({ define: m.defineBindElement })),
  'reuseport-trace': () => import('./traces').then((m) => ({ define: m.defineTraceElements })),
  'reuseport-traces': () => import('./traces').then((m) => ({ define: m.defineTraceElements })),
  'reuseport-exercise': () => import('./exercise').then((m) => ({ define: m.defineExerciseElement })),
  'reuseport-scenario': () => import('./scenario').then((m) => ({ define: m.defineScenarioElement })),
  'reuseport-scenario-match': () => import('./scenario-match').then((m) => ({ define: m.defineScenarioMatchElement })),
  'reuseport-server': () => import('./server').then((m) => ({ define: m.defineServerElement })),
  'reuseport-editor': () => import('./editor').then((m) => ({ define: m.defineEditorElement })),
  'reuseport-quic-reload': () => import('./quic-reload').then((m) => ({ define: m.defineQuicReloadElement })),
};

const started = new Set<string>();

function hydrate(tag: string): void {
  if (started.has(tag)) return;
  started.add(tag);
  const load = islands[tag];
  if (!load) return;
  load()
    .then((m) => m.define())
    .catch((err: unknown) => sayLoadFailed(tag, err instanceof Error ? err.message : String(err)));
}

/**
 * Says in each `tag` element that its widget failed to load, in the
 * element's language. The catalogue is fetched only now (the loader runs on
 * every page and stays small); when it cannot load either, the browser's
 * own message stands alone.
 */
async function sayLoadFailed(tag: string, message: string): Promise<void> {
  const say = await import('../model/messages').then(
    (m) => (el: Element) => m.sayUi(m.langOf(el.closest('[lang]')?.getAttribute('lang') ?? document.documentElement.lang), 'widget.load_failed', { message }),
    () => () => message,
  );
  for (const el of document.querySelectorAll(tag)) {
    const p = document.createElement('p');
    p.className = 'rl-error';
    p.setAttribute('role', 'alert');
    p.textContent = say(el);
    el.replaceChildren(p);
  }
}

/** Hydrates the widgets in `doc` now and as they are added; returns a function that stops watching. */
export function watchIslands(doc: Document = document): () => void {
  const selector = Object.keys(islands).join(',');
  const io =
    'IntersectionObserver' in window
      ? new IntersectionObserver(
          (entries) => {
            for (const e of entries) {
              if (!e.isIntersecting) continue;
              io?.unobserve(e.target);
              hydrate(e.target.localName);
            }
          },
          { rootMargin: '100% 0px' },
        )
      : null;
  const seen = new WeakSet<Element>();
  const add = (el: Element) => {
    if (seen.has(el) || started.has(el.localName)) return;
    seen.add(el);
    // Starlight's Markdown typography must not reach the element's own box.
    el.classList.add('not-content');
    if (io) io.observe(el);
    else hydrate(el.localName);
  };
  const scan = (root: ParentNode) => {
    if (root instanceof Element && root.matches(selector)) add(root);
    for (const el of root.querySelectorAll(selector)) add(el);
  };
  scan(doc);
  const mo = new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) if (n instanceof Element) scan(n);
  });
  mo.observe(doc.documentElement, { childList: true, subtree: true });
  return () => {
    mo.disconnect();
    io?.disconnect();
  };
}
