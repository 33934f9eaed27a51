/**
 * The widgets' stylesheet, adopted by every widget's shadow root: one parsed
 * `CSSStyleSheet` shared by all widgets on a page (constructable stylesheets
 * are allowed by a Content-Security-Policy without 'unsafe-inline').
 */
import widget from './widget.css?inline';
import dispatch from './dispatch.css?inline';
import trace from './trace.css?inline';
import bind from './bind.css?inline';
import paste from './paste.css?inline';
import exercise from './exercise.css?inline';
import scenario from './scenario.css?inline';
import server from './server.css?inline';
import editor from './editor.css?inline';

let sheets: CSSStyleSheet[] | null = null;

/** The shared sheets (parsed on first use). */
export function widgetSheets(): CSSStyleSheet[] {
  if (!sheets) {
    const s = new CSSStyleSheet();
    s.replaceSync([widget, dispatch, trace, bind, paste, exercise, scenario, server, editor].join('\n'));
    sheets = [s];
  }
  return sheets;
}
