/**
 * The embed script's code (`<site>/embed/reuseport-lab-main.js`), imported by
 * the one stable URL a course page loads, `<site>/embed/reuseport-lab.js`
 * (src/embed/bootstrap.js). It defines every
 * `reuseport-*` element lazily: each element pulls only its own code and wasm
 * when it comes near the viewport. It changes nothing else on the host page:
 * no global, no style outside the widgets' shadow roots.
 */
import { watchIslands } from '../islands/loader';
import { setEmbedded, setSiteBase } from '../islands/context';

// This file is served from <site>/embed/; the site is one level up.
setSiteBase(new URL(/* @vite-ignore */ '../', import.meta.url).href);
setEmbedded();
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => watchIslands(), { once: true });
else watchIslands();
