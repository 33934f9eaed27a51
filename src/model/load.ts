/** Loading a wasm package once: in a browser by fetching it beside the bundle, elsewhere from bytes already in hand. */

/** The two ways wasm-bindgen's `--target web` glue starts its module. */
export interface WasmGlue {
  init: () => Promise<unknown>;
  initSync: (module: { module: BufferSource }) => unknown;
}

/** `load` starts the package once (later calls share the first); `loadSync` starts it from bytes (Node, tests, benchmarks). */
export function wasmLoader({ init, initSync }: WasmGlue): { load: () => Promise<void>; loadSync: (bytes: BufferSource) => void } {
  let ready: Promise<void> | undefined;
  return {
    load: () => {
      ready ??= init().then(() => undefined);
      return ready;
    },
    loadSync: (bytes) => {
      initSync({ module: bytes });
      ready = Promise.resolve();
    },
  };
}
