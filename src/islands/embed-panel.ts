/**
 * "Embed this": under every widget on the site, a closed panel that writes
 * the snippet for the widget as it is set now, as a script tag (the element
 * and the one embed script) or as an iframe (`/embed/<name>/?…`), with a
 * copy button. Not shown where the widget is itself embedded.
 */
import { EMBED_WIDGETS, embedTitle } from '../embed/widgets';
import { siteBase } from './context';
import { currentSettings } from './host';
import { sayUi } from '../model/messages';
import { pageLang } from './site';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** The two snippets for `host` (absolute URLs of this site). */
export function snippets(host: HTMLElement): { script: string | null; iframe: string } | null {
  const w = EMBED_WIDGETS.find((x) => x.tag === host.localName || (x.name === 'bind-check' && host.localName === 'reuseport-bind'));
  if (!w) return null;
  const base = new URL(siteBase(), location.href).href;
  const settings = currentSettings(host);
  const lang = pageLang(host);
  const attrs = Object.entries(settings)
    .filter(([, v]) => v !== false)
    .map(([k, v]) => (v === true ? ` ${k}` : ` ${k}="${esc(String(v))}"`))
    .join('');
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(settings)) {
    if (!w.params.includes(k) && !w.flags?.includes(k)) continue;
    if (v === false) continue;
    q.set(k, v === true ? 'true' : v);
  }
  if (lang !== 'en') q.set('lang', lang);
  const qs = q.toString();
  const title = embedTitle(w, lang);
  return {
    script:
      w.script === false
        ? null
        : `<script defer src="${base}embed/reuseport-lab.js"></script>\n<${w.tag}${attrs}${lang !== 'en' ? ` lang="${lang}"` : ''}></${w.tag}>`,
    iframe:
      `<iframe src="${base}embed/${w.name}/${qs ? `?${qs}` : ''}" title="${esc(title)}" width="100%" height="${w.height}" style="border:0" ` +
      `loading="lazy"></iframe>`,
  };
}

let uid = 0;

/** Adds the panel to `shadow`; returns a function removing it. */
export function embedPanel(host: HTMLElement, shadow: ShadowRoot): (() => void) | undefined {
  const first = snippets(host);
  if (!first) return undefined;
  const lang = pageLang(host);
  const t = (key: 'embed' | 'script' | 'iframe' | 'snippet' | 'copy' | 'copied' | 'copy_failed' | 'how') => sayUi(lang, `embed.${key}`);
  const id = `rl-embed-${++uid}`;
  const details = document.createElement('details');
  details.className = 'rl-embed';
  const summary = document.createElement('summary');
  summary.textContent = t('embed');
  const body = document.createElement('div');
  body.className = 'rl-embed-body';
  const kinds = document.createElement('div');
  kinds.setAttribute('role', 'radiogroup');
  kinds.setAttribute('aria-label', t('embed'));
  kinds.className = 'rl-embed-kinds';
  const kindsOffered = first.script === null ? (['iframe'] as const) : (['script', 'iframe'] as const);
  const radios = kindsOffered.map((k, i) => {
    const label = document.createElement('label');
    const r = document.createElement('input');
    r.type = 'radio';
    r.name = id;
    r.value = k;
    r.checked = i === 0;
    label.append(r, ` ${t(k)}`);
    kinds.append(label);
    return r;
  });
  const taLabel = document.createElement('label');
  taLabel.htmlFor = `${id}-ta`;
  taLabel.textContent = t('snippet');
  const ta = document.createElement('textarea');
  ta.id = `${id}-ta`;
  ta.readOnly = true;
  ta.rows = 3;
  ta.spellcheck = false;
  const row = document.createElement('div');
  row.className = 'rl-embed-row';
  const copy = document.createElement('button');
  copy.type = 'button';
  copy.textContent = t('copy');
  const status = document.createElement('span');
  status.setAttribute('role', 'status');
  const how = document.createElement('a');
  how.href = `${siteBase()}${pageLang(host) === 'zh-CN' ? 'zh-cn/' : ''}embedding/`;
  how.textContent = t('how');
  row.append(copy, status, how);
  body.append(kinds, taLabel, ta, row);
  details.append(summary, body);
  const fill = () => {
    const s = snippets(host);
    if (!s) return;
    ta.value = s.script === null || radios[1]?.checked ? s.iframe : s.script;
    status.textContent = '';
  };
  const onCopy = () => {
    ta.select();
    const say = (text: string) => {
      status.textContent = text;
    };
    const copied = navigator.clipboard?.writeText(ta.value);
    if (copied)
      copied.then(
        () => say(t('copied')),
        () => say(t('copy_failed')),
      );
    else say(t('copy_failed'));
  };
  details.addEventListener('toggle', fill);
  kinds.addEventListener('change', fill);
  copy.addEventListener('click', onCopy);
  shadow.append(details);
  return () => details.remove();
}
