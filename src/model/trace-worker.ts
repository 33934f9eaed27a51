/**
 * Reads and checks a trace file off the page's thread: a large file's
 * JSON.parse and schema check would otherwise freeze the page.
 * In: a File. Out: `{ trace }`, `{ errors }` (naming fields) or `{ notJson }`.
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
  postMessage(checkTrace(value));
};
