// Import cycles in src/: every relative import (`import … from`, `import type`,
// `export … from`, `import('…')`) between the site's TypeScript files is an edge,
// and every strongly connected set of two or more files (or a file importing
// itself) is a cycle, printed with its files. An import from a lower layer to a
// higher one (render/ importing islands/) is refused too. Both counts stay at 0, so
// that src/ reads in layers. Generated and wasm-pack files are leaves and not read.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = process.argv[2] ?? 'src';
const SKIP = /(^|\/)(generated|pkg|pkg-lookup)(\/|$)/;

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (SKIP.test(relative(ROOT, p))) continue;
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const files = walk(ROOT);
const known = new Set(files.map((f) => resolve(f)));
// The specifier of every static or dynamic import and re-export; comments are removed first.
const SPEC = /(?:\bimport\s*(?:type\s+)?(?:[\w*{}\s,$]+\s+from\s+)?|\bexport\s+(?:type\s+)?[\w*{}\s,$]+\s+from\s+|\bimport\s*\(\s*)['"]([^'"]+)['"]/g;

function target(from, spec) {
  if (!spec.startsWith('.')) return null;
  const base = resolve(dirname(from), spec);
  for (const c of [base, `${base}.ts`, base.replace(/\.js$/, '.ts'), join(base, 'index.ts')]) if (known.has(c)) return c;
  return null;
}

const edges = new Map();
for (const f of files) {
  const text = readFileSync(f, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
  const to = new Set();
  for (const m of text.matchAll(SPEC)) {
    const t = target(f, m[1]);
    if (t) to.add(t);
  }
  edges.set(resolve(f), [...to]);
}

// Tarjan's strongly connected components, iteratively (no recursion limit on a deep chain).
let index = 0;
const idx = new Map();
const low = new Map();
const onStack = new Set();
const stack = [];
const cycles = [];
for (const start of edges.keys()) {
  if (idx.has(start)) continue;
  const work = [[start, 0]];
  idx.set(start, index);
  low.set(start, index++);
  stack.push(start);
  onStack.add(start);
  while (work.length) {
    const frame = work[work.length - 1];
    const [v, i] = frame;
    const next = edges.get(v) ?? [];
    if (i < next.length) {
      frame[1]++;
      const w = next[i];
      if (!idx.has(w)) {
        idx.set(w, index);
        low.set(w, index++);
        stack.push(w);
        onStack.add(w);
        work.push([w, 0]);
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
      continue;
    }
    work.pop();
    if (work.length) {
      const parent = work[work.length - 1][0];
      low.set(parent, Math.min(low.get(parent), low.get(v)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || (edges.get(v) ?? []).includes(v)) cycles.push(comp.map((c) => relative(process.cwd(), c)).sort());
    }
  }
}

// The layers, lowest first: a file imports its own layer or lower ones, never a higher one
// (data flows model → scene → render; the widgets in islands/ wire them). Files outside these
// folders (hex.ts, clock.ts, styles/, embed/) are held only by the cycle check.
const LAYERS = ['model', 'scene', 'render', 'islands'];
const rank = (f) => LAYERS.indexOf(relative(resolve(ROOT), f).split('/')[0]);
const upward = [];
for (const [from, tos] of edges)
  for (const to of tos) if (rank(from) >= 0 && rank(to) > rank(from)) upward.push(`${relative(process.cwd(), from)} → ${relative(process.cwd(), to)}`);

for (const c of cycles) console.log(`import cycle: ${c.join(' ↔ ')}`);
for (const u of upward) console.log(`import against the layers (${LAYERS.join(' < ')}): ${u}`);
console.log(`check-cycles: ${files.length} files in ${ROOT}/, ${cycles.length} import cycle(s), ${upward.length} import(s) against the layers`);
if (cycles.length || upward.length) process.exit(1);
