/**
 * An iframe page, `/embed/<name>/?…`: one widget filling the page, its
 * attributes from the query (only those the widget takes; anything else is
 * named and refused). Every `reuseport:*` event the widget sends is posted
 * to the parent page as `{ source: 'reuseport-lab', widget, type, detail }`,
 * and so is the page's height (`type: 'height'`) whenever it changes, for
 * automatic sizing. `?origin=https://course.example` restricts the messages
 * to that parent; `?lang=zh-CN` picks the language.
 */
import { watchIslands } from '../islands/loader';
import { setEmbedded } from '../islands/context';
import { EMBED_LANGS, EMBED_WIDGETS, FRAME_PARAMS, MAX_QUERY, type EmbedWidget } from './widgets';

const EVENTS = ['ready', 'started', 'stepped', 'answered', 'completed', 'error'] as const;

/** The widget's attributes from a query, or the problems with the query (each naming its parameter). */
export function frameAttributes(w: EmbedWidget, search: string): { attrs: [string, string][]; lang: string | null; origin: string; problems: string[] } {
  const problems: string[] = [];
  const attrs: [string, string][] = [];
  let lang: string | null = null;
  let origin = '*';
  if (search.length > MAX_QUERY) return { attrs, lang, origin, problems: [`The query is ${search.length} characters long; the limit is ${MAX_QUERY}.`] };
  const q = new URLSearchParams(search);
  const seen = new Set<string>();
  for (const [k, v] of q) {
    if (seen.has(k)) {
      problems.push(`URL parameter '${k}' is given twice.`);
      continue;
    }
    seen.add(k);
    if (k === 'lang') {
      if ((EMBED_LANGS as readonly string[]).includes(v)) lang = v;
      else problems.push(`URL parameter 'lang': '${v.slice(0, 32)}' is not one of ${EMBED_LANGS.join(', ')}.`);
    } else if (k === 'origin') {
      try {
        const u = new URL(v);
        if (u.origin === 'null' || u.origin !== v.replace(/\/$/, '')) throw new Error();
        origin = u.origin;
      } catch {
        problems.push(`URL parameter 'origin': '${v.slice(0, 64)}' is not an origin such as https://course.example.`);
      }
    } else if (w.flags?.includes(k)) {
      if (v === '' || v === 'true') attrs.push([k, '']);
      else if (v !== 'false') problems.push(`URL parameter '${k}' takes true or false, not '${v.slice(0, 32)}'.`);
    } else if (w.params.includes(k)) attrs.push([k, v]);
    else problems.push(`URL parameter '${k}' is not one this widget takes (${[...w.params, ...(w.flags ?? []), ...FRAME_PARAMS].join(', ')}).`);
  }
  return { attrs, lang, origin, problems };
}

function start(): void {
  setEmbedded();
  const name = document.body.dataset.widget ?? '';
  const w = EMBED_WIDGETS.find((x) => x.name === name);
  // Not a <main>: the page hosting the iframe has its own main landmark.
  const main = document.getElementById('rl-frame')!;
  const post = (type: string, detail: unknown, origin: string) => {
    if (window.parent === window) return;
    let data: unknown = null;
    try {
      data = JSON.parse(JSON.stringify(detail ?? null)) as unknown;
    } catch {
      data = null;
    }
    window.parent.postMessage({ source: 'reuseport-lab', widget: name, type, detail: data }, origin);
  };
  if (!w) return;
  const { attrs, lang, origin, problems } = frameAttributes(w, location.search);
  if (lang) document.documentElement.lang = lang;
  if (problems.length) {
    const box = document.createElement('div');
    box.setAttribute('role', 'alert');
    box.className = 'rl-frame-problems';
    const h = document.createElement('p');
    h.textContent = `This embedded ${w.tag} was not started:`;
    const ul = document.createElement('ul');
    for (const p of problems) {
      const li = document.createElement('li');
      li.textContent = p;
      ul.append(li);
    }
    box.append(h, ul);
    main.replaceChildren(box);
    post('error', { problems }, origin);
  } else {
    const el = document.createElement(w.tag);
    for (const [k, v] of attrs) el.setAttribute(k, v);
    for (const kind of EVENTS) el.addEventListener(`reuseport:${kind}`, (e) => post(kind, (e as CustomEvent).detail, origin));
    main.replaceChildren(el);
    watchIslands();
  }
  let last = -1;
  const report = () => {
    const h = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (h === last) return;
    last = h;
    post('height', { height: h }, origin);
  };
  new ResizeObserver(report).observe(document.documentElement);
  report();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start, { once: true });
else start();
