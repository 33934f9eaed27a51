/**
 * One glossary for both languages (messages/glossary.json): every page in
 * content/, every sentence of the model (messages/*.json) and every widget's
 * words (the ui.* sentences of messages/*.json) use the project's term, never a form the
 * glossary lists under "avoid". The Chinese scenario pages wrote "worker" 3
 * to 14 times a page where the guide wrote 工作进程, and "seed article" was
 * translated word for word as 种子文章.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

interface Term {
  en: string;
  'zh-CN': string;
  avoid: { en?: string[]; 'zh-CN'?: string[] };
}
const glossary = JSON.parse(readFileSync('messages/glossary.json', 'utf8')) as { terms: Term[] };

function walk(d: string): string[] {
  return readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
}

/** A page's prose: without fenced code, inline code and link targets (a path like /scenarios/stalled-worker/ is no word). */
function prose(md: string): string {
  return md
    .replace(/^```[\s\S]*?^```/gm, '')
    .replace(/`[^`\n]*`/g, '')
    .replace(/\]\([^)]*\)/g, ']');
}

/** A sentence table's templates, `ui.*` (the widgets' words) or the others (the model's outcomes), without their {placeholders}. */
function table(file: string, ui: boolean): string {
  const t = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
  return Object.entries(t)
    .filter(([k]) => k.startsWith('ui.') === ui)
    .map(([, v]) => v.replace(/\{\w+\}/g, ' '))
    .join('\n');
}

/**
 * The widgets' words in one language: the `ui.*` templates of the language's sentence table, and the string literals
 * of any *-text.ts still holding words, without ${…} expressions (Chinese ones are those with a Chinese character in
 * them, English ones those of the `const en` tables).
 */
function catalogue(lang: 'en' | 'zh'): string {
  return [table(lang === 'en' ? 'messages/en.json' : 'messages/zh-CN.json', true), textFiles(lang)].join('\n');
}

function textFiles(lang: 'en' | 'zh'): string {
  const literal = /'((?:[^'\\\n]|\\.)*)'|`((?:[^`\\]|\\.)*)`|"((?:[^"\\\n]|\\.)*)"/g;
  return walk('src/islands')
    .filter((f) => f.endsWith('-text.ts'))
    .flatMap((f) => {
      let src = readFileSync(f, 'utf8');
      if (lang === 'en') {
        const at = src.search(/^const en\b/m);
        src = at < 0 ? '' : src.slice(at, src.indexOf('\n};', at));
      }
      return [...src.matchAll(literal)].map((m) => (m[1] ?? m[2] ?? m[3] ?? '').replace(/\$\{[^}]*\}/g, ' '));
    })
    .filter((s) => (lang === 'zh') === /[\u4e00-\u9fff]/.test(s))
    .join('\n');
}

const sources = {
  en: [
    ...walk('content/en').map((f) => ({ name: f, text: prose(readFileSync(f, 'utf8')) })),
    { name: 'messages/en.json', text: prose(table('messages/en.json', false)) },
    { name: 'messages/en.json ui.* and src/islands/*-text.ts (en)', text: catalogue('en') },
  ],
  'zh-CN': [
    ...walk('content/zh-CN').map((f) => ({ name: f, text: prose(readFileSync(f, 'utf8')) })),
    { name: 'messages/zh-CN.json', text: prose(table('messages/zh-CN.json', false)) },
    { name: 'messages/zh-CN.json ui.* and src/islands/*-text.ts (zh)', text: catalogue('zh') },
  ],
};

/**
 * A form as a whole word, case and all ("Web Worker" is not "worker"): Latin forms stop at letters, digits, `_` and
 * `-` on either side (worker_processes, per-worker).
 */
function finds(text: string, form: string): string[] {
  const latin = /^[\w -]+$/.test(form);
  const re = latin ? new RegExp(`(?<![\\w\\-./$])${form.replace(/ /g, '\\s+')}(?![\\w\\-(/])`, 'g') : new RegExp(form, 'g');
  return [...text.matchAll(re)].map((m) => text.slice(Math.max(0, m.index - 12), m.index + form.length + 12).replace(/\n/g, ' '));
}

describe('the glossary', () => {
  it("reads the widgets' words in both languages (a moved catalogue must be read here too)", () => {
    expect(catalogue('en').length).toBeGreaterThan(20_000);
    expect(catalogue('zh').length).toBeGreaterThan(10_000);
  });

  it('lists each term once per language', () => {
    for (const lang of ['en', 'zh-CN'] as const) {
      const seen = glossary.terms.map((t) => t[lang]);
      expect(new Set(seen).size, lang).toBe(seen.length);
    }
  });

  for (const t of glossary.terms) {
    for (const lang of ['en', 'zh-CN'] as const) {
      for (const form of t.avoid[lang] ?? []) {
        it(`${lang}: "${form}" is written "${t[lang]}"`, () => {
          const hits = sources[lang].flatMap((s) => finds(s.text, form).map((h) => `${s.name}: …${h}…`));
          expect(hits).toEqual([]);
        });
      }
    }
    it(`"${t.en}" / "${t['zh-CN']}" is used in the pages of both languages`, () => {
      expect(sources.en.some((s) => finds(s.text, t.en.replace(/^the /, '')).length > 0) || t.en.startsWith('the ')).toBe(true);
      expect(
        sources['zh-CN'].some((s) => s.text.includes(t['zh-CN'])),
        t['zh-CN'],
      ).toBe(true);
    });
  }
});
