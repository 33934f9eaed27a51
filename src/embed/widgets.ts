/**
 * The embeddable widgets: one row each, read by the iframe pages
 * (`/embed/<name>/`), their oEmbed documents, the "Embed this" panel and
 * the tests. `params` are the attributes an iframe page passes on from its
 * query; anything else in the query is refused by name. Their titles are
 * the catalogue's (`ui.embed.title.<name>`, {@link embedTitle}).
 */
import { words, type Lang, type WidgetKey } from '../model/messages';

export interface EmbedWidget {
  /** The path segment: `/embed/<name>/`. */
  name: string;
  /** The custom element. */
  tag: string;
  /** Attributes taken from the query (the widget checks their values). */
  params: readonly string[];
  /** Boolean attributes: present when the query has them with an empty value or `true`. */
  flags?: readonly string[];
  /**
   * Whether the script tag works on another origin (false: the widget runs Web
   * Workers, which must come from the page's own origin; embed it as an iframe).
   * @default true
   */
  script?: boolean;
  /** A starting height for the iframe, in CSS pixels (it then reports its own). */
  height: number;
}

export const EMBED_WIDGETS: readonly EmbedWidget[] = [
  {
    name: 'dispatch',
    tag: 'reuseport-dispatch',
    params: ['kernel', 'proto', 'listeners', 'clients', 'rate', 'speed', 'seed', 'secret', 'cpus', 'autoplay'],
    flags: ['compact', 'wildcard'],
    height: 720,
  },
  {
    name: 'lookup',
    tag: 'reuseport-lookup',
    params: ['kernel', 'proto', 'listeners', 'tuples', 'secret'],
    height: 760,
  },
  {
    name: 'bind-check',
    tag: 'reuseport-bind-check',
    params: ['kernel', 'layout'],
    height: 620,
  },
  {
    name: 'trace',
    tag: 'reuseport-trace',
    params: ['src'],
    height: 360,
  },
  {
    name: 'paste',
    tag: 'reuseport-paste',
    params: ['kernel', 'proto', 'listeners', 'text'],
    script: false,
    height: 900,
  },
  {
    name: 'traces',
    tag: 'reuseport-traces',
    params: ['trace'],
    script: false,
    height: 900,
  },
  {
    name: 'exercise',
    tag: 'reuseport-exercise',
    params: ['kind', 'kernel', 'seed', 'count'],
    height: 560,
  },
];

/** The longest query an iframe page reads (a layout in the URL is the largest value; many servers refuse longer request lines). */
export const MAX_QUERY = 8192;

/** The languages a page or widget speaks. */
export const EMBED_LANGS = ['en', 'zh-CN'] as const;

/** Query parameters every iframe page takes besides the widget's own. */
export const FRAME_PARAMS = ['lang', 'origin'] as const;

export function embedWidget(name: string): EmbedWidget | undefined {
  return EMBED_WIDGETS.find((w) => w.name === name);
}

/** A widget's title in `lang`, from the catalogue (`ui.embed.title.<name>` of messages/*.json). */
export function embedTitle(w: EmbedWidget, lang: Lang): string {
  return words(lang, 'embed').say(`title.${w.name}` as WidgetKey<'embed'>);
}
