/**
 * Words live in one catalogue per language (messages/en.json, messages/zh-CN.json): the widgets,
 * scenes and scripts under src/ say them through it and write none themselves. The dispatch
 * visualizer, the explain card, the bind checker and the embed titles each held a Chinese table
 * of their own beside the English one; a Chinese sentence found in src/ outside a comment is such
 * a table coming back. (Chinese in a comment, as an example of what the catalogue says, is fine.)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
const SRC = join(ROOT, 'src');
/** Generated and built code: not written here. */
const SKIP = /(^|\/)(generated|pkg|pkg-lookup)(\/|$)/;
const HAN = /\p{Script=Han}/u;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (SKIP.test(relative(SRC, p))) return [];
    if (e.isDirectory()) return sources(p);
    return /\.(ts|js|mjs)$/.test(e.name) ? [p] : [];
  });
}

/** The lines of `text` with Chinese outside a comment: before a line's `//`, or on a line that is not part of a block comment. */
function chineseOutsideComments(text: string): number[] {
  const out: number[] = [];
  let block = false;
  text.split('\n').forEach((line, i) => {
    let code = line;
    if (block) {
      const end = code.indexOf('*/');
      if (end === -1) return;
      block = false;
      code = code.slice(end + 2);
    }
    const open = code.indexOf('/*');
    if (open !== -1) {
      const close = code.indexOf('*/', open + 2);
      if (close === -1) block = true;
      code = code.slice(0, open) + (close === -1 ? '' : code.slice(close + 2));
    }
    const comment = code.search(/(^|[^:'"`])\/\//);
    if (comment !== -1) code = code.slice(0, comment + 1);
    if (HAN.test(code)) out.push(i + 1);
  });
  return out;
}

describe('one catalogue per language', () => {
  it('finds Chinese in code and not in comments', () => {
    expect(chineseOutsideComments("const a = '中文';")).toEqual([1]);
    expect(chineseOutsideComments('// 中文\n/**\n * 中文\n */\nconst b = 1; // 中文')).toEqual([]);
    expect(chineseOutsideComments("/* 中文 */ const c = '文';\nconst u = 'http://x'; const d = '字';")).toEqual([1, 2]);
  });

  it('src/ writes no Chinese sentence outside messages/*.json', () => {
    const files = sources(SRC);
    expect(files.length, 'the walk finds the sources').toBeGreaterThan(50);
    const found = files.flatMap((f) => chineseOutsideComments(readFileSync(f, 'utf8')).map((line) => `${relative(ROOT, f)}:${line}`));
    expect(found, 'say these through the catalogue (ui.* keys of messages/en.json and messages/zh-CN.json)').toEqual([]);
  });
});
