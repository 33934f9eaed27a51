import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { initSync, modelVersion } from '../../src/model/pkg/reuseport.js';

const wasmPath = fileURLToPath(new URL('../../src/model/pkg/reuseport_bg.wasm', import.meta.url));

describe('wasm model', () => {
  beforeAll(() => {
    initSync({ module: readFileSync(wasmPath) });
  });

  it('reports a semver model version', () => {
    expect(modelVersion()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
