/** Where a widget is: its language and the site's base URL (no other state). */
import { langOf, type Lang } from '../model/messages';
import { hostOf } from './host';
import { siteBase } from './context';

/** The language of a widget: the nearest `lang` attribute around it, else the page's. */
export function pageLang(el?: Element): Lang {
  const near = el ? hostOf(el).closest('[lang]')?.getAttribute('lang') : null;
  return langOf(near ?? document.documentElement.lang);
}

/** A path of the site under its base, in the page's language when `localised` (`traces/` → `/zh-cn/traces/`). */
export function siteUrl(path: string, localised = false, el?: Element): string {
  return `${siteBase()}${localised && pageLang(el) === 'zh-CN' ? 'zh-cn/' : ''}${path}`;
}
