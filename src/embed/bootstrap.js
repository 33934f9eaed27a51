// The embed script a course page loads (`<site>/embed/reuseport-lab.js`), copied as it is by site/embed-build.mjs.
// A classic script, which a browser runs from another site without any CORS header, that imports the widgets' code
// (reuseport-lab-main.js, a module). A module from another site loads only when that site sends
// Access-Control-Allow-Origin: where the import fails, every widget element on the page says so, and names the header
// its site must send, instead of staying empty. Loaded as a module it works the same. It defines no global.
(() => {
  const mine = (s) => /\/embed\/reuseport-lab\.js(?:[?#]|$)/.test(s);
  const src = document.currentScript?.src || [...document.scripts].map((s) => s.src).find(mine);
  if (!src) return;
  const main = new URL('reuseport-lab-main.js', src);

  // The sentences, from the catalogue (ui.embed.unreachable.* of messages/*.json): site/embed-build.mjs writes them in
  // where the marker comment stands when it copies this file, since a classic script imports nothing.
  const WORDS = /* embed-build: words */ {};

  /** The words, in the language around the element. */
  const say = (el, err) => {
    const lang = el.getAttribute('lang') || el.closest('[lang]')?.getAttribute('lang') || document.documentElement.lang || 'en';
    const words = WORDS[lang.toLowerCase().startsWith('zh') ? 'zh-CN' : 'en'] ?? {};
    const site = main.origin;
    const fields = { url: main.href, site, why: err instanceof Error ? err.message : String(err) };
    const key = site === location.origin ? 'same_site' : 'other_site';
    return (words[key] ?? key).replace(/\{(\w+)\}/g, (whole, name) => fields[name] ?? whole);
  };

  /** Writes the failure into a widget element that has not started, once. */
  const tell = (el, err) => {
    if (!el.localName.startsWith('reuseport-') || el.shadowRoot || customElements.get(el.localName)) return;
    const p = document.createElement('p');
    p.setAttribute('role', 'alert');
    p.textContent = say(el, err);
    // CSSOM, not a style attribute: allowed under a Content-Security-Policy without 'unsafe-inline'.
    Object.assign(p.style, {
      margin: '0',
      padding: '0.5em 0.75em',
      border: '1px solid #a04000',
      color: '#7a2e00',
      background: '#fff',
      font: '16px/1.5 system-ui, sans-serif',
    });
    el.attachShadow({ mode: 'open' }).append(p);
    el.dispatchEvent(new CustomEvent('reuseport:error', { detail: { message: p.textContent }, bubbles: true, composed: true }));
  };

  import(main.href).catch((err) => {
    const all = () => [...document.querySelectorAll('*')].filter((el) => el.localName.startsWith('reuseport-'));
    const now = () => {
      for (const el of all()) tell(el, err);
    };
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', now, { once: true });
    else now();
    // An element a course platform adds later says it too.
    new MutationObserver((records) => {
      for (const r of records) for (const n of r.addedNodes) if (n instanceof Element) for (const el of [n, ...n.querySelectorAll('*')]) tell(el, err);
    }).observe(document.documentElement, { childList: true, subtree: true });
  });
})();
