/** Where a widget is: the page's language and the site's base path (no other state). */
import { langOf, type Lang } from '../model/messages';

/** The language of the page the widget is on. */
export function pageLang(): Lang {
  return langOf(document.documentElement.lang);
}

/** A path of the site under its base, in the page's language when `localised` (`traces/` → `/zh-cn/traces/`). */
export function siteUrl(path: string, localised = false): string {
  const base = import.meta.env.BASE_URL.replace(/\/?$/, '/');
  return `${base}${localised && pageLang() === 'zh-CN' ? 'zh-cn/' : ''}${path}`;
}
