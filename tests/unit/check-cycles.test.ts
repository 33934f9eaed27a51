// scripts/check-cycles.mjs keeps src/ free of import cycles (the lint stage runs it).
// Here it is run on small trees written for the test, so that a cycle it must
// find is known by construction, not by reading the script.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Writes `files` (path → text) under a fresh directory and runs the check on it. */
function check(files: Record<string, string>): { code: number; out: string } {
  const root = mkdtempSync(join(tmpdir(), 'cycles-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  try {
    const out = execFileSync('node', ['scripts/check-cycles.mjs', root], { encoding: 'utf8' });
    return { code: 0, out };
  } catch (e) {
    const err = e as { status: number; stdout: string };
    return { code: err.status, out: err.stdout };
  }
}

describe('check-cycles', () => {
  it('passes a tree whose imports all point one way', () => {
    const r = check({
      'a.ts': "import { b } from './b';\nexport const a = b;\n",
      'b.ts': "import type { C } from './lib/c';\nexport const b = 1 as C;\n",
      'lib/c.ts': 'export type C = number;\n',
    });
    expect(r.code).toBe(0);
    expect(r.out).toContain('0 import cycle(s), 0 import(s) against the layers');
  });

  it('finds a cycle of three files, type-only imports and re-exports included', () => {
    const r = check({
      'a.ts': "import type { B } from './b';\nexport type A = B;\n",
      'b.ts': "export { c as B } from './c';\n",
      'c.ts': "import {\n  a,\n} from './a';\nexport const c = a;\n",
      'd.ts': "import { a } from './a';\n",
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/import cycle: .*a\.ts ↔ .*b\.ts ↔ .*c\.ts\n/);
    expect(r.out).not.toMatch(/d\.ts/);
    expect(r.out).toContain('1 import cycle(s)');
  });

  it('counts a dynamic import and ignores an import that is commented out', () => {
    const r = check({
      'a.ts': "export async function f() {\n  return import('./b');\n}\n",
      'b.ts': "// import { f } from './a';\n/* import { f } from './a'; */\nexport const b = 1;\n",
      'c.ts': "export const load = () => import('./d');\n",
      'd.ts': "import { load } from './c';\nexport const d = load;\n",
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/import cycle: .*c\.ts ↔ .*d\.ts/);
    expect(r.out).not.toMatch(/a\.ts ↔/);
  });

  it('refuses an import from a lower layer to a higher one, and allows the other way', () => {
    const r = check({
      'model/m.ts': 'export const m = 1;\n',
      'scene/s.ts': "import { m } from '../model/m';\nexport const s = m;\n",
      'render/r.ts': "import { s } from '../scene/s';\nimport type { W } from '../islands/w';\nexport const r = s as W;\n",
      'islands/w.ts': "import { r } from '../render/r';\nexport type W = number;\nexport const w = r;\n",
      'islands/x.ts': "import { s } from '../scene/s';\nexport const x = s;\n",
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/import against the layers .*render\/r\.ts → .*islands\/w\.ts/);
    expect(r.out).not.toMatch(/islands\/x\.ts →/);
    expect(r.out).toContain('1 import(s) against the layers');
  });
});
