/** Loads the wasm model into Node for unit tests (the browser fetches it instead). */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadModelSync } from '../../src/model/index';

const wasmPath = fileURLToPath(new URL('../../src/model/pkg/reuseport_bg.wasm', import.meta.url));

export function loadModelForTests(): void {
  loadModelSync(readFileSync(wasmPath));
}
