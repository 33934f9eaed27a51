/**
 * Long text cut for display: a value from a file (a trace's command line)
 * may be as long as its schema allows, far more than a reader can use, and
 * every character costs layout. Pure: no DOM.
 */

/** Characters of a trace's command the viewer shows before it cuts. */
export const SHOWN_COMMAND = 2000;

/** What to show of a long text. */
export interface Cut {
  /** The start of the text, at most `max` characters (code points). */
  shown: string;
  /** Characters left out after it (0: the whole text is shown). */
  left: number;
}

/** At most `max` characters of `text`: all of it, or its start and how many characters were left out. */
export function cutText(text: string, max: number): Cut {
  if (text.length <= max) return { shown: text, left: 0 };
  const chars = Array.from(text);
  if (chars.length <= max) return { shown: text, left: 0 };
  return { shown: chars.slice(0, max).join(''), left: chars.length - max };
}
