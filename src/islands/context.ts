/**
 * Where the widgets run: on the site, or embedded in someone else's page by
 * the embed script or an iframe page. Kept apart from everything else so the
 * embed script's first download stays a few kilobytes.
 */

let embedBase: string | null = null;

/** Called once by the embed script: links and fetches go to the site the script came from (absolute, ends in `/`). */
export function setSiteBase(url: string): void {
  embedBase = url.replace(/\/?$/, '/');
}

/** The site's base URL: the embed script's site, else this build's base path. */
export function siteBase(): string {
  return embedBase ?? import.meta.env.BASE_URL.replace(/\/?$/, '/');
}

let embedded = false;

/** Called by the embed script and the iframe pages: widgets there show no "Embed this" panel. */
export function setEmbedded(): void {
  embedded = true;
}

/** Whether the widgets run embedded in someone else's page. */
export function isEmbedded(): boolean {
  return embedded;
}
