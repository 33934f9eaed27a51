/**
 * Reads and checks a trace file off the page's thread: a large file's
 * JSON.parse and schema check would otherwise freeze the page.
 * In: a File. Out: `{ errors }` (naming fields) or `{ notJson }`; or the
 * trace in pieces, so that no single message takes the page long to receive:
 * `{ head }` (the trace without its events), then `{ events }` slices of
 * {@link SLICE}, then `{ done: true }`.
 */
import { MAX_TRACE_BYTES, checkTrace } from './trace-check';

self.onmessage = async (e: MessageEvent<File>) => {
  const file = e.data;
  if (file.size > MAX_TRACE_BYTES) {
    postMessage({ errors: [`the file is ${(file.size / 2 ** 20).toFixed(1)} MB; at most ${MAX_TRACE_BYTES / 2 ** 20} MB is read`] });
    return;
  }
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
