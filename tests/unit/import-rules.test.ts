// .dependency-cruiser.cjs keeps src/ free of import cycles and of imports against its layers (the lint
// stage runs `depcruise --validate`). Here the project's configuration is run on small trees written for
// the test, so that what it must find is known by construction, not by reading the rules.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const CONFIG = resolve('.dependency-cruiser.cjs');
const DEPCRUISE = resolve('node_modules/.bin/depcruise');

/** Writes `files` (path → text) under a fresh directory's src/ and runs the project's rules on it from there. */
function check(files: Record<string, string>): { code: number; out: string } {
  const root = mkdtempSync(join(tmpdir(), 'cycles-'));
  dirs.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, 'src', path, '..'), { recursive: true });
    writeFileSync(join(root, 'src', path), text);
  }
  try {
    const out = execFileSync(DEPCRUISE, ['--config', CONFIG, '--validate', '--output-type', 'err', 'src'], { cwd: root, encoding: 'utf8' });
    return { code: 0, out };
  } catch (e) {
    const err = e as { status: number; stdout: string };
    return { code: err.status, out: err.stdout };
  }
}

describe('the import rules of src/', () => {
  it('passes a tree whose imports all point one way', () => {
    const r = check({
      'a.ts': "import { b } from './b';\nexport const a = b;\n",
      'b.ts': "import type { C } from './lib/c';\nexport const b = 1 as C;\n",
      'lib/c.ts': 'export type C = number;\n',
    });
    expect(r.code).toBe(0);
    expect(r.out).toContain('no dependency violations found (3 modules');
  });

  it('finds a cycle of three files, type-only imports and re-exports included', () => {
    const r = check({
      'a.ts': "import type { B } from './b';\nexport type A = B;\n",
      'b.ts': "export { c as B } from './c';\n",
      'c.ts': "import {\n  a,\n} from './a';\nexport const c = a;\n",
      'd.ts': "import { a } from './a';\n",
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/no-circular: src\/a\.ts →\s+src\/b\.ts →\s+src\/c\.ts →\s+src\/a\.ts/);
    expect(r.out).not.toMatch(/d\.ts/);
    expect(r.out).toContain('1 dependency violations');
  });

  it('counts a dynamic import and ignores an import that is commented out', () => {
    const r = check({
      'a.ts': "export async function f() {\n  return import('./b');\n}\n",
      'b.ts': "// import { f } from './a';\n/* import { f } from './a'; */\nexport const b = 1;\n",
      'c.ts': "export const load = () => import('./d');\n",
      'd.ts': "import { load } from './c';\nexport const d = load;\n",
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/no-circular: src\/c\.ts →\s+src\/d\.ts →\s+src\/c\.ts/);
    expect(r.out).not.toMatch(/src\/a\.ts →/);
  });

  it('refuses an import from a lower layer to a higher one, and allows the other way', () => {
    const r = check({
      'model/m.ts': 'export const m = 1;\n',
      'scene/s.ts': "import { m } from '../model/m';\nexport const s = m;\n",
      'render/r.ts': "import { s } from '../scene/s';\nimport type { W } from '../islands/w';\nexport const r = s as W;\n",
      'islands/w.ts': "import { r } from '../render/r';\nexport type W = number;\nexport const w = r;\n",
      'islands/x.ts': "import { s } from '../scene/s';\nexport const x = s;\n",
    });
    // depcruise exits with its count of violations: the layer rule and the cycle the break closes.
    expect(r.code).toBe(2);
    expect(r.out).toMatch(/render-imports-islands: src\/render\/r\.ts → src\/islands\/w\.ts/);
    expect(r.out).not.toMatch(/islands\/x\.ts →/);
    // The layer break also closes a cycle (render → islands → render): both rules name it.
    expect(r.out).toMatch(/no-circular: src\/(render\/r|islands\/w)\.ts →/);
  });

  it('refuses a scene file that imports a drawing, and a model file that imports a scene, with no cycle involved', () => {
    const r = check({
      'model/m.ts': "import type { S } from '../scene/s';\nexport type M = S;\n",
      'scene/s.ts': "import { draw } from '../render/d';\nexport type S = number;\nexport const s = draw;\n",
      'render/d.ts': 'export const draw = 1;\n',
    });
    expect(r.code).toBe(2);
    expect(r.out).toMatch(/model-imports-above: src\/model\/m\.ts → src\/scene\/s\.ts/);
    expect(r.out).toMatch(/scene-imports-above: src\/scene\/s\.ts → src\/render\/d\.ts/);
    expect(r.out).not.toMatch(/no-circular/);
  });
});
