/**
 * Reads and checks a trace file off the page's thread: a large file's
 * JSON.parse and schema check would otherwise freeze the page. The page
 * checks the size bound (MAX_TRACE_BYTES) before it starts the worker.
 * In: a File. Out: `{ errors }` (naming fields) or `{ notJson }`; or the
 * trace in pieces, so that no single message takes the page long to receive:
 * `{ head }` (the trace without its events), then `{ events }` slices of
 * {@link SLICE}, then `{ done: true }`.
 */
import { checkTrace } from './trace-check';

self.onmessage = async (e: MessageEvent<File>) => {
  const file = e.data;
  let value: unknown;
  try {
    value = JSON.parse(await file.text());
  } catch (err) {
    postMessage({ notJson: err instanceof Error ? err.message : String(err) });
    return;
  }
  const checked = checkTrace(value);
  if (checked.errors) {
    postMessage(checked);
    return;
  }
  const { events, ...head } = checked.trace;
  postMessage({ head: { ...head, events: [] } });
  for (let i = 0; i < events.length; i += SLICE) postMessage({ events: events.slice(i, i + SLICE) });
  postMessage({ done: true });
};

/** Events per message (about 20 ms to receive on this machine's Chromium). */
const SLICE = 10_000;
