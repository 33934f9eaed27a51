/** The wasm packages load once however many widgets ask, and bytes in hand stand in for the fetch. */
import { describe, expect, it } from 'vitest';
import { wasmLoader } from '../../src/model/load';

describe('wasmLoader', () => {
  it('starts the package once for any number of load() calls, all answered by the first', async () => {
    let started = 0;
    const l = wasmLoader({
      init: async () => {
        started++;
      },
      initSync: () => {
        throw new Error('not used');
      },
    });
    const a = l.load();
    const b = l.load();
    expect(a).toBe(b);
    await Promise.all([a, b, l.load()]);
    expect(started).toBe(1);
  });

  it('after loadSync, load() does not fetch the package', async () => {
    let fetched = 0;
    let fromBytes: BufferSource | undefined;
    const l = wasmLoader({
      init: async () => {
        fetched++;
      },
      initSync: ({ module }) => {
        fromBytes = module;
      },
    });
    const bytes = new Uint8Array([0, 97, 115, 109]);
    l.loadSync(bytes);
    await l.load();
    expect(fetched).toBe(0);
    expect(fromBytes).toBe(bytes);
  });
});
