// oEmbed documents (https://oembed.com/, type "rich"), one per embeddable
// widget with its default settings; pages link to theirs for discovery.
import type { APIRoute } from 'astro';
import { EMBED_WIDGETS, embedTitle, type EmbedWidget } from '../../../src/embed/widgets';

export function getStaticPaths() {
  return EMBED_WIDGETS.map((w) => ({ params: { widget: w.name }, props: { w } }));
}

export const GET: APIRoute = ({ props, site }) => {
  const w = (props as { w: EmbedWidget }).w;
  // Absolute when the build knows where it will be served (SITE_URL, see README); else site-relative.
  const origin = site?.origin ?? '';
  const base = import.meta.env.BASE_URL.replace(/\/?$/, '/');
  const src = `${origin}${base}embed/${w.name}/`;
  const body = {
    version: '1.0',
    type: 'rich',
    provider_name: 'Reuseport Lab',
    provider_url: `${origin}${base}`,
    title: embedTitle(w, 'en'),
    width: 800,
    height: w.height,
    html: `<iframe src="${src}" title="${embedTitle(w, 'en')}" width="800" height="${w.height}" style="border:0;max-width:100%" loading="lazy"></iframe>`,
  };
  return new Response(JSON.stringify(body, null, 2), { headers: { 'content-type': 'application/json+oembed' } });
};
